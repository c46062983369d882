"""What ``nami batch`` shows a person: progress while it runs (a status line redrawn on a terminal, one
plain line per finished task otherwise), the summary table, and the changes ``compare`` found."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import click

from nami_yaml.batch.compare import Change, Comparison, failed_checks
from nami_yaml.batch.results import Summary
from nami_yaml.batch.runner import Progress
from nami_yaml.display import plural, visible, visible_line
from nami_yaml.session.cost import money

BAR_WIDTH = 24
REASON_CHARS = 160


def one_line(text: str | None, limit: int = REASON_CHARS) -> str:
    flat = " ".join(visible(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_reason(result: dict[str, Any]) -> str:
    """Why a task failed, in one line: the run's error if it did not answer, else the first failed check."""
    failed = [c for c in result.get("checks") or [] if not c.get("passed")]
    if result.get("status") != "answered" and result.get("error"):
        return one_line(result["error"])
    if failed:
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        return one_line(failed[0].get("reason")) + more
    if result.get("error"):
        return one_line(result["error"])
    return f"status {result.get('status')}"


def _cost(value: float | None) -> str:
    return money(value) if isinstance(value, (int, float)) else "cost unknown"


def result_line(result: dict[str, Any], progress: Progress) -> str:
    count = f"[{progress.done + progress.skipped}/{progress.total + progress.skipped}]"
    steps = result.get("steps")
    facts = f"{result.get('status')}, {steps} step{'' if steps == 1 else 's'}, " \
            f"{result.get('duration_s', 0):.1f} s, {_cost(result.get('cost'))}"
    if result.get("passed"):
        return f"{count} {result['id']} passed ({facts})"
    return f"{count} {result['id']} FAILED ({facts}): {failure_reason(result)}"


class ProgressView:
    """The ``on_progress`` callback of run_batch."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._drawn = False

    def __call__(self, kind: str, progress: Progress, result: dict[str, Any] | None) -> None:
        if kind == "stopping":
            self._line("stopping: no new task starts; running ones are stopped (results so far are kept)")
        elif kind == "notice" and result is not None:
            self._line(f"nami: {visible_line(str(result.get('notice')))}")
        elif kind == "result" and result is not None and (not self.live or not result.get("passed")):
            self._line(result_line(result, progress))  # on a terminal the bar counts the passed ones
        if self.live:
            self._bar(progress)

    def _line(self, text: str) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def _bar(self, progress: Progress) -> None:
        total = progress.total + progress.skipped
        done = progress.done + progress.skipped
        filled = int(BAR_WIDTH * done / total) if total else BAR_WIDTH
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stream.write(f"\r\033[K[{bar}] {done}/{total} done · {len(progress.running)} running · "
                          f"{progress.failed} failed · {_progress_cost(progress)}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def _progress_cost(progress: Progress) -> str:
    if progress.done and progress.priced == 0:
        return "cost unknown"
    return money(progress.cost)


def summary_lines(summary: Summary, results: list[dict[str, Any]], output: str) -> list[str]:
    rate = f"{summary.pass_rate:.1%}" if summary.pass_rate is not None else "-"
    rows = [("tasks", str(summary.tasks + len(summary.missing))),
            ("passed", f"{summary.passed} of {summary.tasks} ({rate})")]
    latest = {r["id"]: r for r in results}
    failed = [r for r in latest.values() if not r.get("passed")]
    if failed:
        shown = ", ".join(f"{r['id']} ({_failed_how(r)})" for r in failed[:8])
        rows.append(("failed", shown + (f", … {len(failed) - 8} more" if len(failed) > 8 else "")))
    if summary.missing:
        rows.append(("not run", f"{len(summary.missing)} (--resume runs them)"))
    rows.append(("statuses", ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items())) or "-"))
    if _cost_unknown(summary):
        cost = "unknown (no model.pricing for this model)"
    else:
        cost = money(summary.cost) + (f" ({plural(summary.unpriced, 'task')} without a price)" if summary.unpriced else "")
    rows.append(("cost", f"{cost}, {summary.tokens:,} tokens"))
    if summary.p50 is not None:
        rows.append(("duration", f"p50 {summary.p50:.1f} s, p95 {summary.p95:.1f} s"))
    rows.append(("results", output))
    return [f"{name:<9} {value}" for name, value in rows]


def _cost_unknown(summary: Summary) -> bool:
    """No task had a price: a total of $0 would read as "free"."""
    return summary.unpriced == summary.tasks


def _failed_how(result: dict[str, Any]) -> str:
    failed = sum(not c.get("passed") for c in result.get("checks") or [])
    if result.get("status") == "answered" and failed:
        return f"{failed} check{'s' if failed != 1 else ''} failed"
    return str(result.get("status"))


def _arrow(a: Any, b: Any) -> str:
    return str(a) if a == b else f"{a} → {b}"


def change_line(change: Change) -> str:
    a, b = change.a or {}, change.b or {}
    if change.kind == "only_a":
        return f"{change.id:<20} only in A ({a.get('status')}, {'passed' if a.get('passed') else 'failed'})"
    if change.kind == "only_b":
        return f"{change.id:<20} only in B ({b.get('status')}, {'passed' if b.get('passed') else 'failed'})"
    passed = _arrow("pass" if a.get("passed") else "FAIL", "pass" if b.get("passed") else "FAIL")
    cost = _arrow(_cost(a.get("cost")), _cost(b.get("cost")))
    line = (f"{change.id:<20} {passed:<12} {_arrow(a.get('status'), b.get('status')):<22} "
            f"steps {_arrow(a.get('steps'), b.get('steps')):<8} {cost}")
    before, after = len(failed_checks(a)), len(failed_checks(b))
    if change.kind == "checks" or before != after:
        line += f"  checks failed {_arrow(before, after)}" + (" (others now)" if before == after else "")
    if change.kind == "regressed":
        line += f"\n{'':<20} why: {failure_reason(b)}"
    return line


def comparison_lines(comparison: Comparison, a_name: str, b_name: str) -> list[str]:
    def headline(label: str, name: str, summary: Summary) -> str:
        rate = f"{summary.pass_rate:.1%}" if summary.pass_rate is not None else "-"
        cost = "cost unknown" if _cost_unknown(summary) else money(summary.cost)
        return f"{label}: {name}  {summary.passed}/{summary.tasks} passed ({rate}), {cost}"

    lines = [headline("A", a_name, comparison.a), headline("B", b_name, comparison.b)]
    if not comparison.changes:
        return [*lines, f"no task changed ({comparison.same} the same)"]
    lines.append(f"changed: {len(comparison.changes)} ({len(comparison.regressions)} now failing); "
                 f"unchanged: {comparison.same}")
    lines.extend(change_line(change) for change in comparison.changes)
    return lines


def echo_lines(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)
