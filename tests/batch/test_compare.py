"""`nami batch compare A B`: the tasks that changed between two runs, regressions first; and the
progress a person sees on a terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from nami_yaml.batch.compare import compare
from nami_yaml.batch.results import new_result
from nami_yaml.batch.runner import Progress
from nami_yaml.cli.batch_view import ProgressView
from nami_yaml.cli.main import cli


def row(task_id: str, passed: bool = True, status: str = "answered", steps: int = 2, cost: float | None = 0.001,
        **more: Any) -> dict[str, Any]:
    return {**new_result(task_id), "passed": passed, "status": status, "steps": steps, "cost": cost, **more}


A = [row("same"), row("breaks"), row("fixed", passed=False), row("slower"), row("pricier"), row("gone"),
     row("timeouts", passed=False, status="max_steps")]
B = [row("same"), row("breaks", passed=False, checks=[{"check": {"file_exists": "x"}, "passed": False,
                                                        "reason": "x does not exist"}]),
     row("fixed"), row("slower", steps=5), row("pricier", cost=0.002), row("new"),
     row("timeouts", passed=False, status="timeout")]


def test_changes_are_listed_regressions_first() -> None:
    comparison = compare(A, B)
    assert [(c.id, c.kind) for c in comparison.changes] == [
        ("breaks", "regressed"), ("fixed", "fixed"), ("timeouts", "status"), ("slower", "steps"),
        ("pricier", "cost"), ("gone", "only_a"), ("new", "only_b")]
    assert comparison.same == 1
    assert [c.id for c in comparison.regressions] == ["breaks"]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_command_shows_the_changes_and_fails_on_a_regression(workdir: Path) -> None:
    write_rows(workdir / "a.jsonl", A)
    write_rows(workdir / "b.jsonl", B)
    result = CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "b.jsonl"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "A: a.jsonl  5/7 passed (71.4%), $0.0070"
    assert lines[2] == "changed: 7 (1 now failing); unchanged: 1"
    assert lines[3].startswith("breaks") and "pass → FAIL" in lines[3]
    assert "why: x does not exist" in lines[4]
    assert any(line.startswith("slower") and "steps 2 → 5" in line for line in lines)
    assert any(line.startswith("pricier") and "$0.0010 → $0.0020" in line for line in lines)
    as_json = json.loads(CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "b.jsonl", "--json"]).output)
    assert as_json["changes"][0] == {"id": "breaks", "change": "regressed",
                                     "a": {"passed": True, "status": "answered", "steps": 2, "cost": 0.001,
                                           "duration_s": 0.0, "error": None, "failed_checks": 0},
                                     "b": {"passed": False, "status": "answered", "steps": 2, "cost": 0.001,
                                           "duration_s": 0.0, "error": None, "failed_checks": 1}}


def test_no_regression_exits_0_and_a_missing_file_is_a_usage_error(workdir: Path) -> None:
    write_rows(workdir / "a.jsonl", A)
    same = CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "a.jsonl"])
    assert same.exit_code == 0 and "no task changed (7 the same)" in same.output
    missing = CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "nope.jsonl"])
    assert missing.exit_code == 2 and "no results file nope.jsonl" in missing.output


def test_on_a_terminal_the_status_line_is_redrawn_and_failures_stay() -> None:
    stream = io.StringIO()
    view = ProgressView(stream, live=True)
    progress = Progress(total=3, running={"a", "b"})
    view("start", progress, None)
    progress.done, progress.running = 1, {"b"}
    view("result", progress, row("a"))
    progress.done, progress.failed, progress.running, progress.cost, progress.priced = 2, 1, set(), 0.25, 2
    view("result", progress, row("b", passed=False, error="boom", status="error"))
    view.close()
    shown = stream.getvalue()
    assert shown.count("\r\033[K[") == 4  # three bars, and the line a failure clears for itself
    assert "2/3 done · 0 running · 1 failed · $0.2500" in shown
    assert "\r\033[K[2/3] b FAILED (error, 2 steps, 0.0 s, $0.0010): boom\n" in shown
    assert "a passed" not in shown  # the bar counts the passed ones
    assert shown.endswith("\n")


def test_a_cost_no_task_reported_is_unknown_not_free(workdir: Path) -> None:
    unpriced = [row("x", cost=None), row("y", cost=None)]
    write_rows(workdir / "a.jsonl", unpriced)
    write_rows(workdir / "b.jsonl", [row("x", cost=None), row("y", cost=None, passed=False)])
    result = CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "b.jsonl"])
    assert result.output.splitlines()[0] == "A: a.jsonl  2/2 passed (100.0%), cost unknown"
    assert "$0.0000" not in result.output
    stream = io.StringIO()
    view = ProgressView(stream, live=True)
    progress = Progress(total=2, running={"y"}, done=1)
    view("result", progress, unpriced[0])
    assert "1/2 done · 1 running · 0 failed · cost unknown" in stream.getvalue()


def checks(*passed: bool) -> list[dict[str, Any]]:
    return [{"check": {"file_exists": f"f{n}"}, "passed": ok, "reason": "" if ok else f"f{n} does not exist"}
            for n, ok in enumerate(passed)]


def test_a_failing_task_with_fewer_failed_checks_is_a_change(workdir: Path) -> None:
    a = [row("closer", passed=False, checks=checks(False, False, False)), row("same", passed=False, checks=checks(False)),
         row("other", passed=False, checks=checks(False, True))]
    b = [row("closer", passed=False, checks=checks(True, True, False)), row("same", passed=False, checks=checks(False)),
         row("other", passed=False, checks=checks(True, False))]
    comparison = compare(a, b)
    assert [(c.id, c.kind) for c in comparison.changes] == [("closer", "checks"), ("other", "checks")]
    assert comparison.same == 1
    assert comparison.changes[0].to_json()["b"]["failed_checks"] == 1
    write_rows(workdir / "a.jsonl", a)
    write_rows(workdir / "b.jsonl", b)
    lines = CliRunner().invoke(cli, ["batch", "compare", "a.jsonl", "b.jsonl"]).output.splitlines()
    assert lines[2] == "changed: 2 (0 now failing); unchanged: 1"
    assert lines[3].startswith("closer") and lines[3].endswith("checks failed 3 → 1")
    assert lines[4].startswith("other") and lines[4].endswith("checks failed 1 (others now)")
