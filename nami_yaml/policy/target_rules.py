"""Rules that name a target (``args: {target: prod}``), checked against the project's targets: a rule on a
target that does not exist matches nothing, so the deny it was written for would silently not hold."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import ConfigFile
from nami_yaml.errors import Problem
from nami_yaml.policy.matchers import MatcherError, compile_matcher, condition_holds
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.targets import TARGET_PARAMETER
from nami_yaml.spec.validate import did_you_mean, short

_NOWHERE = Path("/")  # a target name is no path; a {path: …} condition on one is read from the root


def unknown_target_problems(config: ConfigFile, registry: Registry, names: list[str]) -> list[Problem]:
    """A rule's ``target`` condition naming no target of ``names``, where the rule is for targeted tools
    (a tool with a ``target`` parameter of its own is left alone)."""
    problems: list[Problem] = []
    for index, data in enumerate(config.data.get("rules") or []):
        if data is None:
            continue  # left out by `nami check` for a problem already reported
        spec = (data.get("args") or {}).get(TARGET_PARAMETER)
        if spec is None or not _for_targeted_tools(data["tool"], registry):
            continue
        where = ("rules", index, "args", TARGET_PARAMETER)
        entries = [((i,), item) for i, item in enumerate(spec)] if isinstance(spec, list) else [((), spec)]
        for position, item in entries:
            message = _problem(item, names)
            if message:
                problems.append(config.doc.problem((*where, *position), message))
    return problems


def _for_targeted_tools(tool: str | list[str], registry: Registry) -> bool:
    patterns = [tool] if isinstance(tool, str) else tool
    return any(t.targeted for t in registry if any(fnmatch.fnmatchcase(t.name, p) for p in patterns))


def _problem(item: Any, names: list[str]) -> str | None:
    listed = f"targets: {', '.join(names) or 'none'}"
    if isinstance(item, dict):
        try:
            matcher = compile_matcher(item)
        except MatcherError:
            return None  # reported with the rule itself
        if any(condition_holds(matcher, name, _NOWHERE, every_reading=False) for name in names):
            return None
        return f"no target {matcher.describe()} ({listed}), so this rule never applies"
    if isinstance(item, str) and item in names:
        return None
    hint = did_you_mean(item, names) if isinstance(item, str) else ""
    return f"no target is named {short(item)}, so this rule never applies to it ({listed}){hint}"
