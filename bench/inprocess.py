"""A step whose tool runs inside nami (a Python entry point with the sandbox off), early in a run: the mean
time between requests of a 20-step `nami run` after its first, against the direct-post loop of
bench/minimal_loop.py answering its tool in its own process too (``--inprocess``), posting nami's body.
Issue 42's goal: at most 1.2×. The lowest of the runs (the machine's pauses only ever add time).

    python -m bench.inprocess
"""

from __future__ import annotations

import sys

from bench.common import ROOT, Row, Settings, bench_env, scratch, write_project
from bench.steps import PING as STEPS_PING
from bench.steps import Runs, steps_responder
from nami_yaml.testing import FakeOpenAIServer

PING = STEPS_PING.replace("command: [echo, ok]", "entrypoint: ping_tool:ping")  # the same tool, inside nami
TARGET = 1.2


def measure(settings: Settings) -> list[Row]:
    steps = 20
    rounds = settings.repeat if settings.quick else 3 * settings.repeat
    with scratch() as home, FakeOpenAIServer(responder=steps_responder) as server:
        folder = home / "project"
        (folder / "tools").mkdir(parents=True)
        (folder / "tools" / "ping.yaml").write_text(PING)
        (folder / "tools" / "ping_tool.py").write_text("def ping() -> str:\n    return 'ok'\n")
        config = write_project(folder, server.base_url, f"tools: {{builtin: default, files: [tools/]}}\n"
                                                        f"limits: {{max_steps: {steps + 5}}}\nsandbox: {{mode: off}}\n")
        runs = Runs(server, folder, bench_env(home), steps)
        body = home / "body.json"
        task = f"work: steps={steps}"
        nami = [sys.executable, "-m", "nami_yaml", "run", "--config", str(config), task]
        direct = [sys.executable, str(ROOT / "bench" / "minimal_loop.py"), server.base_url, task, "--direct",
                  str(body), "--inprocess"]
        runs.run(nami, body)  # nami first: the direct loop posts the body it sent
        for _ in range(settings.warmup):
            runs.run(direct)
        samples: dict[str, list[float]] = {"nami": [], "direct": []}
        for _ in range(rounds):
            samples["nami"].append(runs.run(nami)[0])
            samples["direct"].append(runs.run(direct)[0])
    low = {name: min(values) * 1000 for name, values in samples.items()}
    spread = {name: f"{min(v) * 1000:.2f}-{max(v) * 1000:.2f}" for name, v in samples.items()}
    return [Row("steps.inprocess", f"time per step, {steps}-step `nami run`, a tool inside nami, streaming "
                                   f"(lowest; runs {spread['nami']} ms)", low["nami"], "ms", low["direct"],
                f"direct-post loop, its tool in its process (runs {spread['direct']} ms)", f"≤ {TARGET:.1f}×",
                low["nami"] <= TARGET * low["direct"])]


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=3)))
