"""``hooks:`` of agent.yaml and the user config: programs run at points of a run, in Claude Code's format.

Each config file's hooks are read from that file (a hook keeps the file and position it was written at,
for messages and the trust summary); the user config's run with the project's. A hook's program is
project code: trust covers the files its command names (config/loaded.py), and it runs in the sandbox
(runners/hooks.py). What a hook's answer means is app/hooks.py's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import ConfigFile, Effective
from nami_yaml.errors import WARNING
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
    """What the schema cannot say: a matcher that is not a regular expression, and how to write an entry
    copied from Claude Code's settings (its nested ``hooks:`` list, its command as one shell string)."""
    problems: list[Problem] = []
    hooks = data.get("hooks")
    if not isinstance(hooks, Mapping):
        return problems
    for event in EVENTS:
        for index, entry in enumerate(hooks.get(event) or ()):
            if isinstance(entry, Mapping) and isinstance(entry.get("hooks"), list):
                problems.append(doc.problem(("hooks", event, index, "hooks"), CLAUDE_NESTED, key=True))
            if isinstance(entry, Mapping) and isinstance(entry.get("command"), str):
                problems.append(doc.problem(("hooks", event, index, "command"), COMMAND_STRING.format(
                    shlex_words(entry["command"]))))
            matcher = entry.get("matcher") if isinstance(entry, Mapping) else None
            if isinstance(matcher, str) and matcher not in ("", "*"):
                try:
                    re.compile(matcher)
                except re.error as exc:
                    problems.append(doc.problem(("hooks", event, index, "matcher"),
                                                       f"not a regular expression: {exc}"))
    return problems


CLAUDE_NESTED = ("Claude Code's nested form: nami's is flat, one entry per program: {matcher: ..., command: "
                 "[program, args...], timeout: ...} (docs/hooks.md)")
COMMAND_STRING = ("a hook's command is a list of words, run without a shell: {} (a shell line: "
                  "[sh, -c, '...'])")


def shlex_words(line: str) -> str:
    """A one-line command as the list nami takes, for a message."""
    try:
        return json.dumps(shlex.split(line))
    except ValueError:
        return json.dumps(["sh", "-c", line])


def matcher_problems(effective: Effective, tools: Collection[str], renamed: Mapping[str, str]) -> list[Problem]:
    """Warnings for matchers that match none of ``tools`` but name one of Claude Code's tools (``Bash``,
    ``Write|Edit``, ``mcp__github__.*``): copied unchanged, such a hook would never run. ``renamed``: Claude
    Code's tool names and nami's. A matcher for tools not loaded here (an MCP server's) is left alone."""
    problems: list[Problem] = []
    for config in effective.files:
        hooks = config.data.get("hooks")
        if not isinstance(hooks, Mapping):
            continue
        for event in sorted(TOOL_EVENTS):
            for index, entry in enumerate(hooks.get(event) or ()):
                matcher = entry.get("matcher") if isinstance(entry, Mapping) else None
                if not isinstance(matcher, str) or matcher in ("", "*"):
                    continue
                try:
                    pattern = re.compile(matcher)
                except re.error:
                    continue  # (hook_problems reports it)
                if any(pattern.search(tool) for tool in tools):
                    continue
                theirs = [name for name in renamed if pattern.search(name)]
                if theirs:
                    ours = "|".join(dict.fromkeys(renamed[name] for name in theirs))
                    message = (f"matcher {matcher!r} matches none of this agent's tools: it names Claude Code's "
                               f"{', '.join(theirs)}; nami's tool names differ (matcher: \"^({ours})$\")")
                elif "mcp__" in matcher:
                    message = (f"matcher {matcher!r} matches none of this agent's tools: nami names an MCP "
                               f"server's tools SERVER__TOOL, without Claude Code's mcp__ "
                               f"({matcher.replace('mcp__', '')!r})")
                else:
                    continue
                problems.append(config.doc.problem(("hooks", event, index, "matcher"), message, severity=WARNING))
    return problems


def hook_words(data: Mapping[str, Any]) -> list[list[str]]:
    """The command lines of a file's hooks, for what trust covers (config/loaded.py)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, Mapping):
        return []
    return [[str(word) for word in entry["command"]] for event in EVENTS for entry in hooks.get(event) or ()
            if isinstance(entry, Mapping) and isinstance(entry.get("command"), list) and entry["command"]]
