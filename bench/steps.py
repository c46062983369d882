"""Per-step cost: what `nami run` adds to each model request and tool call, against bench/minimal_loop.py
over the same openai SDK, fake server and trivial tool (`echo ok` in a process), streaming and not.

Two baselines. The goal is the direct-post loop, which posts the same body nami sends (its system prompt,
tool definitions and options, taken from nami's first request in the same run) and reads the reply as
plain JSON, as nami's client does: the physical floor of a loop over this SDK. The other is the seeds'
loop, which calls `chat.completions.create()` with its one tool; the SDK's walk of every message and tool
against its types makes it slower with every step, so a ratio against it mostly measures the SDK (kept
because the seeds measured it).

Every figure is the steady state: the mean time between two requests reaching the fake server, over the
run's requests after the first tenth (which pay for imports and warm caches), in the least disturbed of the
runs (the lowest such mean, for every loop alike; three runs per repeat of nami and the direct-post loop).
Start-up is not in it; the whole-process row shows it (a median). The loops take turns in every round, on
the same scripted server.

    python -m bench.steps
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import ROOT, Row, Settings, bench_env, median, nami_command, scratch, timed, write_project
from nami_yaml.testing import FakeOpenAIServer, ScriptedResponse, call, text, tool_calls

PING = """\
name: ping
description: Answers ok.
risk: read
parameters: {type: object, properties: {}}
command: [echo, ok]
"""
TARGET = 1.10
LOOPS = ("nami", "direct", "seeds")
BASELINES = {"direct": "direct-post loop", "seeds": "seeds' loop, `chat.completions.create()`"}


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
    # The baselines run `echo ok` as a plain process; so does nami here. What the sandbox adds to a call is
    # a row of its own (bench/sandbox.py), measured on the same call.
    return write_project(folder, base_url, f"tools: {{builtin: default, files: [tools/]}}\n"
                                           f"limits: {{max_steps: {max_steps}}}\nsandbox: {{mode: off}}\n")


def steady_step(arrivals: list[float]) -> float:
    """Mean seconds between consecutive requests, after the first tenth of them."""
    skip = max(1, len(arrivals) // 10)
    if len(arrivals) - skip < 2:
        raise RuntimeError(f"{len(arrivals)} requests are too few for a steady state")
    return (arrivals[-1] - arrivals[skip]) / (len(arrivals) - 1 - skip)


class Runs:
    """One process per run; what each run's requests were, read at the server."""

    def __init__(self, server: FakeOpenAIServer, cwd: Path, env: dict[str, str], steps: int):
        self.server, self.cwd, self.env, self.steps = server, cwd, env, steps

    def run(self, command: list[str], keep: Path | None = None) -> tuple[float, float]:
        """The run's steady time per step and its whole wall time, in seconds; its first request is kept
        in ``keep`` (see keep_body) unless that file exists."""
        requests = self.server.requests
        requests.clear()
        elapsed = timed(lambda: subprocess.run(command, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True))
        arrivals = [r.arrived for r in requests]
        if len(arrivals) != self.steps:
            raise RuntimeError(f"{command[0]}: {len(arrivals)} requests reached the server, expected {self.steps}")
        if keep is not None and not keep.exists():
            keep_body(requests[0], keep)
        # The server records every request it parsed (a 200-step run's: some 70,000 objects); kept from run to
        # run, they grew to millions, and the server's own garbage collections paused it for up to 0.6 s mid-run.
        requests.clear()
        return steady_step(arrivals), elapsed


def keep_body(request: dict[str, Any], path: Path) -> None:
    """Keep a request of nami's without the conversation: what the direct-post loop sends with its own
    messages (taken from nami's first timed run, which always runs before the direct-post loop's)."""
    body = dict(request)
    body["messages"] = [m for m in body["messages"] if m["role"] == "system"]
    path.write_text(json.dumps(body))


def measure(settings: Settings) -> list[Row]:
    steps = settings.size(200, 12)
    # The lowest of more runs than elsewhere: on this VM one loop's steady mean moved by a third between runs
    # a few seconds apart (3.99-5.32 ms, six runs of nami not streaming), and the two loops' lowest of five
    # came 1.00x-1.13x apart from one run of the section to the next. Three runs per repeat of nami and the
    # direct-post loop (1-2 s each) narrow that, for both alike.
    rounds = settings.repeat if settings.quick else 3 * settings.repeat
    seeds_rounds = min(settings.repeat, 3)  # a 200-step run of the seeds' loop takes many seconds
    rows = []
    with scratch() as home, FakeOpenAIServer(responder=steps_responder) as server:
        config = ping_project(home / "project", server.base_url, steps + 5)
        env = bench_env(home)
        runs = Runs(server, config.parent, env, steps)
        task = f"work: steps={steps}"
        minimal = [sys.executable, str(ROOT / "bench" / "minimal_loop.py"), server.base_url, task]
        for stream in (True, False):
            flag = [] if stream else ["--no-stream"]
            body = home / f"body-{len(flag)}.json"
            commands = {"nami": [*nami_command(), "run", "--config", str(config), *flag, task],
                        "direct": [*minimal, *flag, "--direct", str(body)], "seeds": [*minimal, *flag]}

            keep = {"nami": body}  # nami runs first, and the direct-post loop reads the body it sent
            for name in LOOPS[:2] * settings.warmup:
                runs.run(commands[name], keep.get(name))  # page cache and .pyc files
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in LOOPS}
            for round_ in range(rounds):
                for name in LOOPS:  # in turns (nami first), so a burst of load from elsewhere hits all of them
                    if name != "seeds" or round_ < seeds_rounds:
                        samples[name].append(runs.run(commands[name], keep.get(name)))
            # The least disturbed run of each loop: every run does the same work (nami's own collections and
            # caches included), and a pause of the machine's (single gaps of 50-250 ms, seen in both loops
            # alike) only ever adds time; one such pause moves a 200-step mean by up to a millisecond.
            per_step = {name: min(s[0] for s in samples[name]) * 1000 for name in LOOPS}
            mode, key = ("streaming", "stream") if stream else ("not streaming", "plain")
            label = f"time per step, {steps}-step `nami run`, {mode} (steady state)"
            ours = per_step["nami"]
            rows.append(Row(f"steps.{key}", label, ours, "ms", per_step["direct"], BASELINES["direct"],
                            f"≤ {TARGET:.2f}×", ours <= per_step["direct"] * TARGET))
            rows.append(Row(f"steps.{key}.seeds", label, ours, "ms", per_step["seeds"], BASELINES["seeds"]))
            if stream:
                whole = {name: median([s[1] for s in samples[name]]) for name in LOOPS}
                rows.append(Row("steps.process", f"a whole {steps}-step `nami run`, streaming, start-up included",
                                whole["nami"], "s", whole["direct"], BASELINES["direct"]))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=3)))
