"""The results file (JSONL, one line per finished task, written whole as each task ends) and its summary.

A line is appended with one write and flushed to disk before the next task's, so an interrupted batch
leaves a valid file: ``--resume`` reads it, drops a line cut short by a crash, and runs what is left.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.errors import ConfigError

# The statuses a task can end with: the run's own, plus the batch's.
RUN_STATUSES = ("answered", "max_steps", "max_cost", "stopped", "error", "invalid_answer")
BATCH_STATUSES = ("timeout", "crashed", "setup_failed", "interrupted")
FIELDS = ("id", "status", "passed", "checks", "answer", "steps", "usage", "cost", "duration_s", "session",
          "error", "model")


class ResultsError(ConfigError):
    """A results file that cannot be read or written, or is there already: a usage error (exit 2)."""


def new_result(task_id: str) -> dict[str, Any]:
    """A result with every field, for a task that has not got anywhere yet."""
    return {"id": task_id, "status": "error", "passed": False, "checks": [], "answer": None, "steps": 0,
            "usage": None, "cost": None, "duration_s": 0.0, "session": None, "error": None, "model": None}


_KINDS: dict[str, tuple[type, ...]] = {
    "status": (str,), "passed": (bool,), "checks": (list,), "answer": (str, type(None)), "steps": (int,),
    "usage": (dict, type(None)), "cost": (int, float, type(None)), "duration_s": (int, float),
    "session": (str, type(None)), "error": (str, type(None)), "model": (str, type(None)),
}


def result_problem(value: Any, task_id: str) -> str | None:
    """Why ``value``, sent back for task ``task_id`` from elsewhere (a Ray node), is not a result this
    machine can write and count: None when it is one."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not a result"
    if value.get("id") != task_id:
        return f"a result for {str(value.get('id'))[:80]!r}, not for this task"
    for key, kinds in _KINDS.items():
        if key in value and not isinstance(value[key], kinds):
            return f"its {key} is a {type(value[key]).__name__}"
    if value.get("status") not in (*RUN_STATUSES, *BATCH_STATUSES):
        return f"its status {str(value.get('status'))[:40]!r} is not one nami knows"
    if any(not isinstance(c, dict) or not isinstance(c.get("passed"), bool) or not isinstance(c.get("reason"), str)
           for c in value.get("checks") or []):
        return "its checks are not check results"
    usage = value.get("usage") or {}
    counts = [usage.get(key) for key in ("prompt_tokens", "completion_tokens")]
    if any(n is not None and (not isinstance(n, int) or isinstance(n, bool)) for n in counts):
        return "its usage has token counts that are not numbers"
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        return f"it cannot be written as JSON ({exc})"
    return None


def failed_to_start(job: Any, exc: BaseException) -> dict[str, Any]:
    """The result of a task whose worker could not be started or reached."""
    result = new_result(job.task_id)
    result.update(status="crashed", error=f"the task's worker could not run: {type(exc).__name__}: {exc}")
    return result


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete result line of ``path`` (a line without an id, or cut short, is skipped)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ResultsError(f"no results file {path}") from None
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    results = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            results.append(value)
    return results


class ResultsFile:
    """Appends results to ``path``. ``resume``: keep what is there (minus a cut-off last line); otherwise
    the file must not exist yet, so an earlier run's results are never overwritten."""

    def __init__(self, path: Path, *, resume: bool = False):
        self.path = path
        self.previous: list[dict[str, Any]] = []
        if path.exists() and not resume:
            raise ResultsError(f"{path} already exists: add --resume to run only the tasks it does not have, "
                               "or choose another file with -o")
        if resume and path.exists():
            self._drop_partial_line()
            self.previous = read_results(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None

    def _drop_partial_line(self) -> None:
        with self.path.open("rb+") as handle:
            data = handle.read()
            if data and not data.endswith(b"\n"):
                handle.truncate(data.rfind(b"\n") + 1)

    def done_ids(self) -> set[str]:
        return {r["id"] for r in self.previous}

    def write(self, result: dict[str, Any]) -> None:
        line = (json.dumps(result, ensure_ascii=False, default=str) + "\n").encode("utf-8", "surrogateescape")
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` in 0..1) of ``values``; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Summary:
    tasks: int = 0
    passed: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    cost: float = 0.0
    unpriced: int = 0  # tasks whose cost is unknown
    tokens: int = 0
    p50: float | None = None
    p95: float | None = None
    missing: list[str] = field(default_factory=list)  # tasks of the task file with no result yet

    @property
    def failed(self) -> int:
        return self.tasks - self.passed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.tasks if self.tasks else None

    @property
    def all_passed(self) -> bool:
        return self.tasks > 0 and self.passed == self.tasks and not self.missing

    def to_json(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "passed": self.passed, "failed": self.failed, "pass_rate": self.pass_rate,
                "statuses": dict(self.statuses), "cost": round(self.cost, 6), "unpriced_tasks": self.unpriced,
                "tokens": self.tokens, "p50_duration_s": self.p50, "p95_duration_s": self.p95,
                "missing": self.missing}


def summarize(results: list[dict[str, Any]], expected: list[str] | None = None) -> Summary:
    """The summary of ``results`` (the last result of each id counts); ``expected``: the task file's ids."""
    latest = {r["id"]: r for r in results}
    if expected is not None:
        wanted = set(expected)
        latest = {k: v for k, v in latest.items() if k in wanted}
    summary = Summary(tasks=len(latest))
    durations = []
    for result in latest.values():
        summary.passed += result.get("passed") is True
        summary.statuses[str(result.get("status"))] += 1
        cost = result.get("cost")
        if isinstance(cost, (int, float)):
            summary.cost += cost
        else:
            summary.unpriced += 1
        usage = result.get("usage") or {}
        summary.tokens += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        if isinstance(result.get("duration_s"), (int, float)):
            durations.append(float(result["duration_s"]))
    summary.p50, summary.p95 = percentile(durations, 0.5), percentile(durations, 0.95)
    if expected is not None:
        summary.missing = [task_id for task_id in expected if task_id not in latest]
    return summary
