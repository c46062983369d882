"""The system prompt: agent.yaml's ``system`` or ``system_file``, else a short default, then the names and
descriptions of the agent's skills, then the project's AGENTS.md in a marked section (config/instructions.py).

Only the date (never the time) is added, so the request prefix stays the same all day and providers'
prompt caches keep hitting.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from pathlib import Path

from nami_yaml.config.effective import Effective
from nami_yaml.config.skills import Skill

DEFAULT_SYSTEM = """\
You are nami, a careful assistant working in a software workspace through tools.
Inspect before you change: read files rather than guess. Make small, exact edits.
When a tool returns an error, read it and fix your next call. Finish with a brief answer: what you did \
and what you found."""


def system_prompt(effective: Effective, workspace: Path, today: datetime.date | None = None,
                  skills: Iterable[Skill] = (), cwd: Path | None = None, instructions: str = "") -> str:
    """Built once per agent, so it is the same bytes for every request of a run. ``cwd``: where the user
    started nami; named when it is not the workspace root, so "this folder" still means something.
    ``instructions``: the AGENTS.md section, after nami's own prompt (which it does not replace)."""
    base = (effective.get("system") or DEFAULT_SYSTEM).strip()  # system_file was read into `system`
    listed = [f"- {skill.name}: {skill.description}" for skill in skills]
    if listed:
        # Names and descriptions only: a skill's body costs tokens when it is used, not in every request.
        base += "\n\nSkills (read one with the skill tool before you use it):\n" + "\n".join(listed)
    if instructions:
        base += f"\n\n{instructions}"
    day = (today or datetime.date.today()).isoformat()
    # Said here rather than in every tool's parameters, and kept with a custom prompt too.
    return (f"{base}\n\nWorkspace (tool paths are relative to it): {workspace}\n"
            f"{_current_folder(workspace, cwd)}Today's date: {day}")


def _current_folder(workspace: Path, cwd: Path | None) -> str:
    if cwd is None:
        return ""
    workspace, cwd = workspace.resolve(), cwd.resolve()
    if cwd == workspace:
        return ""
    if workspace in cwd.parents:
        return f"Current folder: {cwd.relative_to(workspace).as_posix()} (relative to the workspace)\n"
    return f"Current folder: {cwd} (outside the workspace)\n"
