"""The results file: never overwritten, resumable after a cut, and summarized (pass rate, cost, p50/p95);
and the process tree a timeout kills."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nami_yaml.batch.proctree import descendants, kill_tree
from nami_yaml.batch.results import ResultsError, ResultsFile, new_result, percentile, read_results, summarize


def result(task_id: str, passed: bool = True, cost: float | None = 0.01, duration: float = 1.0,
           status: str = "answered") -> dict[str, object]:
    return {**new_result(task_id), "status": status, "passed": passed, "cost": cost, "duration_s": duration,
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}


def test_an_existing_results_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(result("a")) + "\n")
    with pytest.raises(ResultsError, match="already exists: add --resume"):
        ResultsFile(path)
    assert read_results(path)[0]["id"] == "a"


def test_resume_keeps_complete_lines_and_drops_a_cut_one(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(result("a")) + "\n" + '{"id": "b", "sta')
    with ResultsFile(path, resume=True) as results:
        assert results.done_ids() == {"a"}
        results.write(result("c"))
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a", "c"]


def test_a_new_results_file_and_its_folder_are_made(tmp_path: Path) -> None:
    path = tmp_path / "out" / "r.jsonl"
    with ResultsFile(path) as results:
        results.write(result("a"))
    assert read_results(path)[0]["id"] == "a"
    with pytest.raises(ResultsError, match="no results file"):
        read_results(tmp_path / "missing.jsonl")


def test_percentiles_are_nearest_rank() -> None:
    values = [float(n) for n in range(1, 21)]
    assert percentile(values, 0.5) == 10.0 and percentile(values, 0.95) == 19.0
    assert percentile([3.0], 0.95) == 3.0 and percentile([], 0.5) is None


def test_the_summary_counts_the_last_result_of_each_task() -> None:
    results = [result("a", passed=False, status="timeout"), result("a", duration=2.0), result("b", passed=False),
               result("c", cost=None, duration=9.0)]
    summary = summarize(results, expected=["a", "b", "c", "d"])
    assert (summary.tasks, summary.passed, summary.failed) == (3, 2, 1)
    assert summary.pass_rate == pytest.approx(2 / 3)
    assert summary.cost == pytest.approx(0.02) and summary.unpriced == 1
    assert (summary.p50, summary.p95) == (2.0, 9.0)
    assert summary.missing == ["d"] and not summary.all_passed
    assert summary.tokens == 330
    assert summarize([result("a")], expected=["a"]).all_passed


def test_kill_tree_reaches_processes_in_sessions_of_their_own(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # The child starts a grandchild in a new session (as nami starts tools), then waits.
    script = ("import subprocess, sys, time\n"
              f"p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
              f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
              "time.sleep(300)\n")
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        grandchild = int(pid_file.read_text())
        assert grandchild in (descendants(child.pid) or [])
        kill_tree(child.pid)
        assert child.wait(timeout=10) == -9
        deadline = time.monotonic() + 10
        while Path(f"/proc/{grandchild}").exists() and b") Z " not in Path(f"/proc/{grandchild}/stat").read_bytes():
            assert time.monotonic() < deadline, "the grandchild survived"
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            os.kill(child.pid, 9)
            child.wait()
