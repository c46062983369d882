"""``nami batch compare A B``: which tasks changed between two results files (a prompt, tool or model
change under review): passed to failed first, then the fixed, then other changes of status, of the checks
that failed (a failing task closer to passing, or further), of steps or cost."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.batch.results import Summary, summarize

# The order changes are listed in: the ones a reviewer must see first.
KINDS = ("regressed", "fixed", "status", "checks", "steps", "cost", "only_a", "only_b")
COST_TOLERANCE = 1e-9


@dataclass
class Change:
    id: str
    kind: str  # one of KINDS
    a: dict[str, Any] | None
    b: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        def brief(result: dict[str, Any] | None) -> dict[str, Any] | None:
            if result is None:
                return None
            return {**{k: result.get(k) for k in ("passed", "status", "steps", "cost", "duration_s", "error")},
                    "failed_checks": len(failed_checks(result))}

        return {"id": self.id, "change": self.kind, "a": brief(self.a), "b": brief(self.b)}


@dataclass
class Comparison:
    a: Summary
    b: Summary
    changes: list[Change] = field(default_factory=list)
    same: int = 0  # tasks in both with nothing changed

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regressed"]

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "unchanged": self.same,
                "changes": [c.to_json() for c in self.changes]}


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Comparison:
    """The changes from results ``a`` to results ``b`` (the last result of each id counts)."""
    first = {r["id"]: r for r in a}
    second = {r["id"]: r for r in b}
    comparison = Comparison(summarize(a), summarize(b))
    for task_id in [*first, *(k for k in second if k not in first)]:
        kind = _kind(first.get(task_id), second.get(task_id))
        if kind is None:
            comparison.same += 1
        else:
            comparison.changes.append(Change(task_id, kind, first.get(task_id), second.get(task_id)))
    comparison.changes.sort(key=lambda c: KINDS.index(c.kind))
    return comparison


def _kind(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str | None:
    if b is None:
        return "only_a"
    if a is None:
        return "only_b"
    if bool(a.get("passed")) != bool(b.get("passed")):
        return "regressed" if a.get("passed") else "fixed"
    if a.get("status") != b.get("status"):
        return "status"
    if failed_checks(a) != failed_checks(b):  # both pass or both fail, but not the same checks fail
        return "checks"
    if a.get("steps") != b.get("steps"):
        return "steps"
    cost_a, cost_b = a.get("cost"), b.get("cost")
    if (cost_a is None) != (cost_b is None) or (
            cost_a is not None and cost_b is not None and abs(cost_a - cost_b) > COST_TOLERANCE):
        return "cost"
    return None


def failed_checks(result: dict[str, Any]) -> list[str]:
    """The checks of a result that failed, each as its JSON (sorted: the order they ran in is no change)."""
    return sorted(json.dumps(c.get("check"), sort_keys=True) for c in result.get("checks") or []
                  if isinstance(c, dict) and not c.get("passed"))
