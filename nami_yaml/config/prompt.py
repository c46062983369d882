"""The system prompt: agent.yaml's ``system`` or ``system_file``, else a short default.

Only the date (never the time) is added, so the request prefix stays the same all day and providers'
prompt caches keep hitting.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from nami_yaml.config.settings import Effective

DEFAULT_SYSTEM = """\
You are nami, a careful assistant that works in a software workspace through tools.
Inspect before you change: read files and list folders rather than guessing. Make small, exact edits.
When a tool returns an error, read it and correct your next call. Paths are relative to the workspace.
When the task is done, answer briefly with what you did and what you found."""


def system_prompt(effective: Effective, workspace: Path, today: datetime.date | None = None,
                  cwd: Path | None = None) -> str:
    """Built once per agent, so it is the same bytes for every request of a run. ``cwd``: where the user
    started nami; named when it is not the workspace root, so "this folder" still means something."""
    base = (effective.get("system") or DEFAULT_SYSTEM).strip()  # system_file was read into `system`
    day = (today or datetime.date.today()).isoformat()
    return f"{base}\n\nWorkspace: {workspace}\n{_current_folder(workspace, cwd)}Today's date: {day}"


def _current_folder(workspace: Path, cwd: Path | None) -> str:
    if cwd is None:
        return ""
    workspace, cwd = workspace.resolve(), cwd.resolve()
    if cwd == workspace:
        return ""
    if workspace in cwd.parents:
        return f"Current folder: {cwd.relative_to(workspace).as_posix()} (relative to the workspace)\n"
    return f"Current folder: {cwd} (outside the workspace)\n"
