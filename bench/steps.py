"""Per-step overhead: what `nami run` adds to each model request and tool call, against the minimal loop
in bench/minimal_loop.py over the same openai SDK, fake server and trivial tool (`echo ok` in a process),
streaming and not. Both are whole processes as a user starts them; the figure per step is
(time of an N-step run - time of a 1-step run) / (N - 1), which takes start-up out of it.

    python -m bench.steps
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    Row,
    Settings,
    bench_env,
    interleaved,
    nami_command,
    scratch,
    timed,
    write_project,
)
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse, call, text, tool_calls

PING = """\
name: ping
description: Answers ok.
risk: read
parameters: {type: object, properties: {}}
command: [echo, ok]
"""
TARGET = 1.05


def steps_responder(body: dict[str, Any]) -> ScriptedResponse:
    """Calls `ping` until the run has made the number of requests its task names ("steps=N"), then answers."""
    messages = body["messages"]
    task = next(m["content"] for m in messages if m["role"] == "user")
    wanted = int(re.search(r"steps=(\d+)", task).group(1))  # type: ignore[union-attr]
    if sum(m["role"] == "assistant" for m in messages) < wanted - 1:
        return tool_calls(call("ping", {}))
    return text("done")


def ping_project(folder: Path, base_url: str, max_steps: int) -> Path:
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "ping.yaml").write_text(PING)
    return write_project(folder, base_url, f"tools: {{builtin: default, files: [tools/]}}\n"
                                           f"limits: {{max_steps: {max_steps}}}\n")


def measure(settings: Settings) -> list[Row]:
    steps = settings.size(200, 4)
    repeat = min(settings.repeat, 3)  # a 200-step run takes seconds; three rounds give a stable median
    rows = []
    with scratch() as home, FakeOpenAIServer(responder=steps_responder) as server:
        config = ping_project(home / "project", server.base_url, steps + 5)
        env = bench_env(home)
        nami = nami_command()
        minimal = [sys.executable, str(ROOT / "bench" / "minimal_loop.py"), server.base_url]

        def launch(command: list[str]) -> float:
            return timed(lambda: subprocess.run(command, cwd=config.parent, env=env, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True))

        for stream in (True, False):
            flag = [] if stream else ["--no-stream"]
            commands = {}
            for n in (1, steps):
                commands[f"nami {n}"] = [*nami, "run", "--config", str(config), *flag, f"work: steps={n}"]
                commands[f"minimal {n}"] = [*minimal, f"work: steps={n}", *flag]
            for name in list(commands)[:2] * settings.warmup:
                launch(commands[name])  # the one-step runs: page cache and .pyc files
            times = interleaved({name: (lambda c=command: launch(c)) for name, command in commands.items()}, repeat)
            ours = (times[f"nami {steps}"] - times["nami 1"]) / (steps - 1) * 1000
            theirs = (times[f"minimal {steps}"] - times["minimal 1"]) / (steps - 1) * 1000
            mode = "streaming" if stream else "not streaming"
            rows.append(Row(f"steps.{'stream' if stream else 'plain'}",
                            f"time per step, {steps}-step `nami run`, {mode}", ours, "ms", theirs,
                            "minimal loop", f"≤ {TARGET}×", ours <= theirs * TARGET))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=5)))
