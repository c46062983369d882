"""Benchmark: `nami batch run` throughput, in tasks per minute, for 1, 2 and 4 local workers against the
fake server (each task: a fresh workspace, one tool call, an answer, two checks).

    python -m bench.batch [TASKS] [--delay SECONDS] [--ray]

``--delay`` makes each scripted response wait (a stand-in for a real model's latency, default 0: the
numbers then measure nami's own cost per task: a worker process, its imports, the workspace, the
session). ``--ray`` adds a row for a local Ray. Measured here, never asserted in tests: machines differ.
In the table (`python -m bench`): tasks per minute for 1, 2 and 4 workers, against 1 worker; and tasks per
CPU-minute (the CPU time of every process of the batch: the batch, its workers' fork server and workers,
their tools), warm workers against `--fresh-workers`, with 1 worker (issue 42's goal: at least 3×).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Row, Settings, bench_env, median, nami_command, scratch, write_project
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls


def tasks_file(folder: Path, count: int) -> Path:
    (folder / "fixture").mkdir()
    (folder / "fixture" / "notes.txt").write_text("one\ntwo\n")
    tasks = [{"id": f"b{n:03d}", "prompt": f"[b{n:03d}] read the notes", "workspace": "fixture",
              "checks": [{"answer_matches": "two"}, {"called": "read_file"}]} for n in range(count)]
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def script(server: FakeOpenAIServer, count: int, delay: float) -> None:
    for n in range(count):
        server.add_task(f"[b{n:03d}]", tool_calls(call("read_file", {"path": "notes.txt"}), delay=delay),
                        text("the notes say one, two", delay=delay))


def timed_batch(folder: Path, tasks: Path, server: FakeOpenAIServer, count: int, delay: float, label: str,
                options: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Seconds the whole `nami batch run` took, and how many tasks passed."""
    script(server, count, delay)
    output = folder / f"results-{label.replace(' ', '-')}.jsonl"
    output.unlink(missing_ok=True)
    command = [*nami_command(), "batch", "run", str(tasks), "-o", str(output), *options]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    rows = [json.loads(line) for line in output.read_text().splitlines()] if output.exists() else []
    passed = sum(r["passed"] for r in rows)
    if passed != count:
        sys.stderr.write(done.stdout + done.stderr)
    return elapsed, passed


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux), so that the CPU time of every process
    of a batch (the workers' fork server outlives the batch by a moment) is counted in RUSAGE_CHILDREN."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap_orphans(deadline: float = 10.0) -> None:
    """Wait for the orphans this process adopted (the fork server ends once the batch has)."""
    ends = time.monotonic() + deadline
    while time.monotonic() < ends:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(folder: Path, tasks: Path, server: FakeOpenAIServer, count: int, delay: float, label: str,
        options: list[str]) -> None:
    elapsed, passed = timed_batch(folder, tasks, server, count, delay, label, options)
    print(f"| {label:<10} | {count:>5} | {elapsed:>7.1f} | {count / elapsed * 60:>12.0f} | {passed:>6} |")


def measure(settings: Settings) -> list[Row]:
    count = settings.size(20, 2)
    adopt_orphans()
    with scratch() as home, FakeOpenAIServer() as server:
        config = write_project(home / "project", server.base_url)
        tasks = tasks_file(config.parent, count)
        env = bench_env(home)
        rates: dict[int, float] = {}
        per_cpu: dict[str, list[float]] = {"warm": [], "fresh": []}  # tasks per CPU-minute, 1 worker
        for round_ in range(settings.repeat):
            for kind in ("warm", "fresh") if round_ % 2 == 0 else ("fresh", "warm"):
                before = cpu_of_children()
                options = ["--config", str(config), "--workers", "1"] + (["--fresh-workers"] if kind == "fresh" else [])
                _, passed = timed_batch(config.parent, tasks, server, count, 0.0, f"cpu-{kind}", options, env)
                reap_orphans()
                if passed != count:
                    raise RuntimeError(f"batch ({kind} workers): {passed} of {count} tasks passed")
                per_cpu[kind].append(count / (cpu_of_children() - before) * 60)
        for workers in (1, 2, 4):
            samples = []
            for _ in range(settings.repeat):
                elapsed, passed = timed_batch(config.parent, tasks, server, count, 0.0, f"{workers}", [
                    "--config", str(config), "--workers", str(workers)], env)
                reap_orphans()
                if passed != count:
                    raise RuntimeError(f"batch with {workers} workers: {passed} of {count} tasks passed")
                samples.append(count / elapsed * 60)
            rates[workers] = median(samples)
    warm, fresh = median(per_cpu["warm"]), median(per_cpu["fresh"])
    return [Row(f"batch.workers{w}", f"`nami batch run`, {count} tasks, {w} worker{'s' if w > 1 else ''}",
                rates[w], "tasks/min", rates[1] if w > 1 else None, "1 worker" if w > 1 else "")
            for w in (1, 2, 4)] + [
        Row("batch.per_core", f"`nami batch run`, {count} tasks, 1 worker: tasks per CPU-minute (every process "
                              "of the batch)", warm, "tasks/min", fresh, "1 worker, `--fresh-workers` (a new Python "
                              "per task, as before)", "≥ 3×", warm >= 3 * fresh)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="?", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each scripted response waits")
    parser.add_argument("--ray", action="store_true", help="also run on a local Ray (needs the ray extra)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name, FakeOpenAIServer() as server:
        folder = Path(name)
        os.environ["NAMI_API_KEY"] = "bench"
        os.environ["XDG_DATA_HOME"] = str(folder / "data")  # sessions and audit stay in the temporary folder
        os.environ["XDG_STATE_HOME"] = str(folder / "state")
        (folder / "agent.yaml").write_text(
            f"model: {{provider: custom, name: fake-model, base_url: '{server.base_url}'}}\n")
        tasks = tasks_file(folder, args.tasks)
        print(f"nami batch, {args.tasks} tasks, {args.delay:g} s per model response, {os.cpu_count()} CPUs\n")
        print("| backend    | tasks | seconds | tasks/minute | passed |")
        print("|------------|------:|--------:|-------------:|-------:|")
        for workers in (1, 2, 4):
            run(folder, tasks, server, args.tasks, args.delay, f"{workers} worker{'s' if workers > 1 else ''}",
                ["--config", str(folder / "agent.yaml"), "--workers", str(workers)])
        if args.ray:
            run(folder, tasks, server, args.tasks, args.delay, "local Ray",
                ["--config", str(folder / "agent.yaml"), "--ray"])


if __name__ == "__main__":
    main()
