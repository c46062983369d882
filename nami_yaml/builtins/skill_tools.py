"""What the ``skill`` built-in adds to a skill's body: its files, read by relative path, and the tools its
``allowed-tools`` names (Agent Skills, docs/conventions.md).

``allowed-tools`` never grants anything: nami's policy decides every call as it would without the skill (a
``Bash(git:*)`` does not pre-approve git). What it does is load the on-demand tools it names, appended to
the tools sent (the list only grows at its end, so prompt caches hold), and tell the model which of its
names nami has no tool for. Claude Code's names are mapped where the mapping is plain; a nami tool's own
name, and Claude Code's ``mcp__SERVER__TOOL``, name nami's ``SERVER__TOOL``.

A skill's files are read, never run: a script in ``scripts/`` runs only through a tool (bash), whose call
the policy decides like any other.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from nami_yaml.errors import ToolError
from nami_yaml.paths import SKIPPED_FOLDERS
from nami_yaml.registry.groups import loads_in
from nami_yaml.runtime import RuntimeContext, SkillText

SKILL_READER = "skill"
# Claude Code's tool names and nami's tool doing the same; the rest (WebSearch, Task, TodoWrite…) have none.
CLAUDE_TOOLS = {"Bash": "bash", "Read": "read_file", "Write": "write_file", "Edit": "edit_file",
                "MultiEdit": "edit_file", "Glob": "glob", "Grep": "grep", "LS": "list_dir", "WebFetch": "fetch_url"}
_ENTRY = re.compile(r"^([A-Za-z0-9_.-]+)(?:\((.*)\))?$")
MAX_FILE_BYTES = 1_000_000  # read at most this much of a skill's file; the result is capped further
MAX_LISTED = 50  # files of a skill named after its body


def mapped_tools(entries: Iterable[str], known: Collection[str]) -> tuple[list[str], list[str]]:
    """nami's tools for ``allowed-tools`` entries (among ``known``), and the entries it has none for."""
    tools: list[str] = []
    missing: list[str] = []
    for entry in entries:
        match = _ENTRY.match(entry.strip())
        name = match.group(1) if match else ""
        candidate = name[len("mcp__"):] if name.startswith("mcp__") else CLAUDE_TOOLS.get(name, name)
        if candidate and candidate in known:
            if candidate not in tools:
                tools.append(candidate)
        else:
            missing.append(entry)
    return tools, missing


def groups_of(tools: Iterable[str], tool_groups: Mapping[str, list[str]]) -> list[str]:
    """The on-demand groups holding ``tools``, in their order."""
    return list(dict.fromkeys(group for tool in tools for group, names in tool_groups.items() if tool in names))


def use_tools(skill: SkillText, ctx: RuntimeContext) -> str:
    """Load the on-demand groups of the tools the skill names, and say what was done (empty: none named)."""
    entries = getattr(skill, "allowed_tools", ())
    if not entries:
        return ""
    tools, missing = mapped_tools(entries, ctx.tool_names)
    groups = groups_of(tools, ctx.tool_groups)
    new = ctx.loaded_groups.add(groups) if groups else []
    lines = []
    if tools:
        lines.append(f"Tools this skill uses: {', '.join(tools)}"
                     + (f" (now loaded: {', '.join(new)})" if new else "")
                     + ". Each call is still decided by nami's policy: allowed-tools approves nothing.")
    if missing:
        lines.append(f"Not available here (no such tool in nami for this agent): {', '.join(missing)}.")
    return "\n" + "\n".join(lines)


def skill_files(skill: SkillText) -> list[str]:
    """The skill's files other than SKILL.md, relative to its folder (as the walk of trust reaches them)."""
    found: list[str] = []
    for root, dirs, names in os.walk(skill.folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        found += [os.path.relpath(os.path.join(root, name), skill.folder) for name in sorted(names)]
    return [name for name in found if name != "SKILL.md"]


def files_note(skill: SkillText) -> str:
    files = skill_files(skill)
    if not files:
        return ""
    more = f" and {len(files) - MAX_LISTED} more" if len(files) > MAX_LISTED else ""
    return (f"\nIts files (read one with the skill tool: name and file; a script runs only through a tool such as "
            f"bash): {', '.join(files[:MAX_LISTED])}{more}")


def read_skill_file(skill: SkillText, relative: str) -> str:
    """A file of the skill's folder by its relative path; nothing outside it (no ``..``, no link out)."""
    folder = skill.folder.resolve()
    target = (folder / relative).resolve()
    if os.path.isabs(relative) or folder not in target.parents:
        raise ToolError(f"{relative!r} is not a file of skill {skill.name}: give a path relative to its folder "
                        f"({', '.join(skill_files(skill)[:MAX_LISTED]) or 'it has no other files'})")
    try:
        with open(target, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"cannot read {relative} of skill {skill.name}: {exc.strerror or exc}") from None
    text = data[:MAX_FILE_BYTES].decode("utf-8", "replace")
    return text + (f"\n[cut at {MAX_FILE_BYTES:,} bytes]" if len(data) > MAX_FILE_BYTES else "")


def loads_with_skills(messages: Iterable[dict[str, Any]], tool_groups: Mapping[str, list[str]],
                      skills: Mapping[str, SkillText], known: Collection[str]) -> list[str]:
    """The groups a conversation loaded, in order: by load_tools calls, and by reading a skill whose
    allowed-tools names on-demand tools; a session taken up again gets them back."""
    groups: list[str] = []
    for message in messages:
        groups += [g for g in loads_in([message], tool_groups) if g not in groups]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls or ():
            function = call.get("function") or {}
            if function.get("name") != SKILL_READER:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                continue
            skill = skills.get(arguments.get("name")) if isinstance(arguments, dict) else None
            if skill is None or arguments.get("file") is not None:
                continue
            tools, _ = mapped_tools(getattr(skill, "allowed_tools", ()), known)
            groups += [g for g in groups_of(tools, tool_groups) if g not in groups]
    return groups
