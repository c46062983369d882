"""Parallelism: four read-only calls in one model turn, each sleeping 1 s, run side by side. Timed from
`nami run --json`'s first `tool_call` line to its last `tool_result` line, as the lines arrive; the
baseline is the same turn with one such call.

    python -m bench.parallel
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from bench.common import Row, Settings, bench_env, median, nami_command, scratch, write_project
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls

NAP = """\
name: nap
description: Sleeps a while, then says so.
risk: read
parameters: {{type: object, properties: {{n: {{type: integer}}}}}}
command: [sleep, "{seconds}"]
"""


def tool_phase(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds from the first tool_call event to the last tool_result event, read live."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, bufsize=1)
    first = last = None
    assert process.stdout is not None
    for line in process.stdout:
        now = time.perf_counter()
        kind = json.loads(line).get("type")
        if kind == "tool_call" and first is None:
            first = now
        elif kind == "tool_result":
            last = now
    if process.wait() != 0 or first is None or last is None:
        raise RuntimeError(f"{' '.join(command)}: exited {process.returncode} without tool events")
    return last - first


def measure(settings: Settings) -> list[Row]:
    seconds = 1.0 if not settings.quick else 0.2
    with scratch() as home, FakeOpenAIServer() as server:
        folder = home / "project"
        (folder / "tools").mkdir(parents=True)
        (folder / "tools" / "nap.yaml").write_text(NAP.format(seconds=seconds))
        config = write_project(folder, server.base_url, "tools: {builtin: default, files: [tools/]}\n")
        env = bench_env(home)
        command = [*nami_command(), "run", "--json", "--config", str(config), "nap"]
        samples: dict[int, list[float]] = {1: [], 4: []}
        for _ in range(settings.repeat):
            for calls in (1, 4):
                server.add(tool_calls(*(call("nap", {"n": n}) for n in range(calls))), text("rested"))
                samples[calls].append(tool_phase(command, folder, env))
    four, one = median(samples[4]), median(samples[1])
    return [Row("parallel.four_reads", f"4 read-only calls sleeping {seconds:g} s, one turn", four, "s", one,
                "1 such call", f"≈ {seconds:g} s (≤ 1.1× of one call)", four <= one * 1.1)]


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=5)))
