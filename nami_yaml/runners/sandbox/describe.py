"""A plan as people and records see it: :func:`describe` for dry runs, ``nami tools call --dry-run`` and
audit records (plain data), :func:`summary` for one line of an approval prompt. Paths under HOME are
written with ``~``. Nothing here escapes terminal characters: the front end that prints does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nami_yaml.runners.sandbox.plan import OFF, SandboxPlan


def describe(plan: SandboxPlan | None, home: Path | None = None) -> dict[str, Any]:
    """``{"mode": ..., "network": ..., ...}``: what the call may write, read and reach. The long list of
    hidden paths is summed up (``hidden``: how many, of which nami's own folders are always a part);
    ``home: hidden``: the home folder is an empty one but for what is shown; ``masked``: the files of the
    programs rules deny by name, which nothing runs in this call."""
    if plan is None:
        return {"mode": OFF, "reason": "not sandboxed"}
    if plan.refusal is not None:
        return {"mode": "refused", "reason": plan.refusal}
    if plan.mode == OFF:
        return {"mode": OFF, "reason": plan.reason}
    shown: dict[str, Any] = {"mode": plan.mode, "network": plan.network, "workspace": _shown(plan.workspace, home)}
    if plan.writable or plan.call_writes:
        shown["writable"] = _all(dict.fromkeys((*plan.writable, *plan.call_writes)), home)
    if plan.reads:
        shown["reads"] = _all(plan.reads, home)
    if plan.host_proc:
        shown["host_processes"] = True
    if plan.read_only:
        shown["read_only"] = _all(plan.read_only, home)
    if plan.masked:
        shown["masked"] = _all(plan.masked, home)
    if plan.empty:
        shown["home"] = "hidden"  # an empty one: the call sees of it only what is shown (reads, PATH folders)
    shown["hidden"] = len(plan.hidden)
    return shown


def summary(plan: SandboxPlan | None, home: Path | None = None) -> str:
    """One line: ``sandbox: workspace-write, network off; writable ~/.cache/go-build; reads ~/.kube/config``."""
    line = sandbox_line({"sandbox": describe(plan, home)})
    assert line is not None
    return line


def sandbox_line(plan: Mapping[str, Any]) -> str | None:
    """The summary line of an invocation's plan() dict (its "sandbox" entry), for front ends that only
    have the dict; None when the plan has no sandbox entry (built-in Python tools, MCP calls)."""
    shown = plan.get("sandbox")
    if not isinstance(shown, Mapping):
        return None
    if shown.get("mode") in (OFF, "refused"):
        return f"sandbox: {shown.get('mode')} ({shown.get('reason', '')})"
    parts = [f"sandbox: {shown.get('mode')}, network {'on' if shown.get('network') else 'off'}"]
    for key, label in (("writable", "also writes"), ("reads", "reads hidden")):
        if shown.get(key):
            parts.append(f"{label} {', '.join(map(str, shown[key]))}")
    if shown.get("masked"):
        parts.append(f"denied programs masked ({', '.join(map(str, shown['masked']))})")
    if shown.get("host_processes"):
        parts.append("sees the host's processes")
    return "; ".join(parts)


def _all(paths: Iterable[Path], home: Path | None) -> list[str]:
    return [_shown(p, home) for p in paths]


def _shown(path: Path, home: Path | None) -> str:
    if home is not None and (path == home or home in path.parents):
        rest = path.relative_to(home)
        return "~" if not rest.parts else f"~/{rest}"
    return str(path)
