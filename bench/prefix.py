"""Prefix stability: the share of requests in an N-step `nami run` (default 100) whose messages start with
the previous request's messages unchanged, and whose tools and model are the same, so a provider's prompt
cache can reuse everything sent before. Counted on what the fake server received; 100 % is the target
between compactions (this run has none).

    python -m bench.prefix
"""

from __future__ import annotations

import subprocess

from bench.common import Row, Settings, bench_env, nami_command, scratch
from bench.steps import ping_project, steps_responder
from nami_yaml.testing import FakeOpenAIServer
from nami_yaml.testing.fake_server import RecordedRequest


def extends(previous: RecordedRequest, current: RecordedRequest) -> bool:
    before, after = previous["messages"], current["messages"]
    return (after[:len(before)] == before and len(after) > len(before)
            and current.get("tools") == previous.get("tools") and current.get("model") == previous.get("model"))


def measure(settings: Settings) -> list[Row]:
    steps = settings.size(100, 5)
    with scratch() as home, FakeOpenAIServer(responder=steps_responder) as server:
        config = ping_project(home / "project", server.base_url, steps + 5)
        subprocess.run([*nami_command(), "run", "--config", str(config), f"work: steps={steps}"], cwd=config.parent,
                       env=bench_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        requests = list(server.requests)
    if len(requests) != steps:
        raise RuntimeError(f"expected {steps} requests, the server saw {len(requests)}")
    kept = sum(extends(a, b) for a, b in zip(requests, requests[1:], strict=False))
    share = kept / (len(requests) - 1) * 100
    return [Row("prefix.stable", f"requests extending the previous one unchanged, {steps}-step run", share, "%",
                target="100 %", met=kept == len(requests) - 1)]


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=1)))
