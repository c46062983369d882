"""``hooks:`` of agent.yaml and the user config: programs run at points of a run, in Claude Code's format.

Each config file's hooks are read from that file (a hook keeps the file and position it was written at,
for messages and the trust summary); the user config's run with the project's. A hook's program is
project code: trust covers the files its command names (config/loaded.py), and it runs in the sandbox
(runners/hooks.py). What a hook's answer means is app/hooks.py's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import ConfigFile, Effective
from nami_yaml.sandbox_settings import SandboxNeeds
from nami_yaml.spec.yamlpos import Document, Problem

PRE_TOOL_USE, POST_TOOL_USE = "PreToolUse", "PostToolUse"
USER_PROMPT_SUBMIT, SESSION_START, STOP = "UserPromptSubmit", "SessionStart", "Stop"
PRE_COMPACT, SUBAGENT_STOP = "PreCompact", "SubagentStop"
EVENTS = (PRE_TOOL_USE, POST_TOOL_USE, USER_PROMPT_SUBMIT, SESSION_START, STOP, PRE_COMPACT, SUBAGENT_STOP)
TOOL_EVENTS = frozenset({PRE_TOOL_USE, POST_TOOL_USE})
DEFAULT_TIMEOUT = 60.0
# Claude Code's scripts find the project through this variable; nami's own name for it is NAMI_WORKSPACE.
WORKSPACE_VARIABLES = ("CLAUDE_PROJECT_DIR", "NAMI_WORKSPACE")
_VARIABLE = re.compile(r"\$(?:\{(CLAUDE_PROJECT_DIR|NAMI_WORKSPACE)\}|(CLAUDE_PROJECT_DIR|NAMI_WORKSPACE)\b)")


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: tuple[str, ...]  # as written; `argv(workspace)` is what runs
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT
    sandbox: SandboxNeeds = SandboxNeeds()
    base: Path = Path(".")  # the folder of the file that declares it
    source: str = ""  # "file:line:col", for messages

    def matches(self, tool: str) -> bool:
        if self.event not in TOOL_EVENTS or self.matcher in ("", "*"):
            return True
        try:
            return re.search(self.matcher, tool) is not None
        except re.error:  # (nami check reports it; a hook that cannot match runs for no tool)
            return False

    def argv(self, workspace: Path) -> list[str]:
        """The command as it runs: $CLAUDE_PROJECT_DIR and $NAMI_WORKSPACE are the workspace, ``~`` is home,
        and a relative path with a / in it is taken from the declaring file's folder."""
        words = [_VARIABLE.sub(lambda _: str(workspace), word) for word in self.command]
        program = os.path.expanduser(words[0])
        if "/" in program and not os.path.isabs(program):
            program = str((self.base / program).resolve())
        return [program, *words[1:]]


def hook_specs(effective: Effective) -> tuple[HookSpec, ...]:
    """Every hook of every config file read, in the order the files were layered (computed once)."""
    if "hooks" not in effective.memo:
        effective.memo["hooks"] = tuple(spec for config in effective.files for spec in hooks_of(config))
    return effective.memo["hooks"]


def hooks_of(config: ConfigFile) -> list[HookSpec]:
    hooks = config.data.get("hooks")
    if not isinstance(hooks, Mapping):
        return []
    found: list[HookSpec] = []
    for event in EVENTS:
        for index, entry in enumerate(hooks.get(event) or ()):
            if not isinstance(entry, Mapping) or not entry.get("command"):
                continue
            line, col = config.doc.position(("hooks", event, index))
            found.append(HookSpec(
                event=event, command=tuple(str(word) for word in entry["command"]),
                matcher=str(entry.get("matcher") or ""), timeout=float(entry.get("timeout") or DEFAULT_TIMEOUT),
                sandbox=SandboxNeeds.from_mapping(entry.get("sandbox"), origin=f"{config.path}"),
                base=config.path.parent, source=f"{config.doc.file}:{line}:{col}"))
    return found


def hook_problems(doc: Document, data: Mapping[str, Any]) -> list[Problem]:
    """What the schema cannot say: a matcher that is not a regular expression."""
    problems: list[Problem] = []
    hooks = data.get("hooks")
    if not isinstance(hooks, Mapping):
        return problems
    for event in EVENTS:
        for index, entry in enumerate(hooks.get(event) or ()):
            matcher = entry.get("matcher") if isinstance(entry, Mapping) else None
            if isinstance(matcher, str) and matcher not in ("", "*"):
                try:
                    re.compile(matcher)
                except re.error as exc:
                    problems.append(doc.problem(("hooks", event, index, "matcher"),
                                                       f"not a regular expression: {exc}"))
    return problems


def hook_words(data: Mapping[str, Any]) -> list[list[str]]:
    """The command lines of a file's hooks, for what trust covers (config/loaded.py)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, Mapping):
        return []
    return [[str(word) for word in entry["command"]] for event in EVENTS for entry in hooks.get(event) or ()
            if isinstance(entry, Mapping) and isinstance(entry.get("command"), list) and entry["command"]]
