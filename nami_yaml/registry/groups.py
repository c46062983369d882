"""Tools sent on demand: which groups (library groups, MCP servers) go to the model only once it loads
them, and the catalogue of what can be loaded.

Every tool is in the registry either way (rules, approvals, the audit log, ``nami tools list`` and ``mcp
serve`` see them all); what differs is whether its definition is in the first request. The model sees a
compact catalogue in the ``load_tools`` built-in (group names and tool names) and loads a group's full
definitions in one step. Loading appends to the tool list, so what was sent before is sent again byte for
byte and providers' prompt caches keep hitting.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

LOADER = "load_tools"  # the built-in that loads on-demand groups
AUTO_THRESHOLD = 1_500  # characters of group definitions sent at start by `on_demand: auto`, at most

OnDemand = bool | str  # true, false or "auto" (agent.yaml tools.on_demand)


def definition_size(definition: dict[str, Any]) -> int:
    """Characters of one definition as the client sends it (compact JSON)."""
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")))


def on_demand_groups(tools: Collection[Any], setting: OnDemand = "auto", eager: Collection[str] = (),
                     threshold: int = AUTO_THRESHOLD) -> frozenset[str]:
    """The groups whose definitions wait until the model loads them. ``true``: every group but the
    ``eager`` ones; ``false``: none; ``auto``: all of them (but the eager ones) once the groups' definitions
    together weigh more than ``threshold`` characters, else none (a few small tools cost less than a step)."""
    groups = {tool.group: None for tool in tools if tool.group is not None and tool.group not in eager}
    if setting is False or not groups:
        return frozenset()
    if setting == "auto" and not weighs_more(
            (tool.definition(docs_hint=True) for tool in tools if tool.group in groups), threshold):
        return frozenset()
    return frozenset(groups)


def weighs_more(definitions: Iterable[dict[str, Any]], limit: int) -> bool:
    """Whether ``definitions`` together weigh more than ``limit`` characters; sized only until they do (a
    thousand tools' definitions are not all written out to learn that they weigh more than a few)."""
    weight = 0
    for definition in definitions:
        weight += definition_size(definition)
        if weight > limit:
            return True
    return False


def catalogue(tools: Iterable[Any], groups: Collection[str]) -> dict[str, list[str]]:
    """Group name -> the names of its tools, for the groups given, in registry order."""
    found: dict[str, list[str]] = {}
    for tool in tools:
        if tool.group in groups:
            found.setdefault(tool.group, []).append(tool.name)
    return found


def loader_definition(definition: dict[str, Any], listing: dict[str, list[str]]) -> dict[str, Any]:
    """load_tools' definition with the catalogue in its description and the group names as an enum."""
    function = dict(definition["function"])
    lines = "; ".join(f"{group}: {compact(group, names)}" for group, names in listing.items())
    function["description"] = f"{function['description']} Groups and their tools: {lines}."
    parameters = json.loads(json.dumps(function["parameters"]))
    parameters["properties"]["groups"]["items"]["enum"] = list(listing)
    function["parameters"] = parameters
    return {**definition, "function": function}


NAMED_AT_MOST = 24  # a larger group (a project's folder of tools) is named by its count and first tools


def compact(group: str, names: list[str]) -> str:
    """A group's tool names, their shared prefix written once: ``kubectl_{get,logs}``, ``github__{a,b}``;
    a group of more than NAMED_AT_MOST tools in one short line: ``1000 tools: a, b, c, …``."""
    if len(names) > NAMED_AT_MOST:
        return f"{len(names)} tools: {', '.join(names[:3])}, …"
    for prefix in (f"{group}__", f"{group}_"):
        if len(names) > 1 and all(name.startswith(prefix) and len(name) > len(prefix) for name in names):
            return prefix + "{" + ",".join(name[len(prefix):] for name in names) + "}"
    return ", ".join(names)


def loads_in(messages: Iterable[dict[str, Any]], known: Collection[str]) -> list[str]:
    """The groups a conversation loaded (its load_tools calls, in order): a session taken up again gets them
    back, so its requests go on with the tools they had."""
    groups: list[str] = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        for call in calls or ():
            function = call.get("function") or {}
            if function.get("name") != LOADER:
                continue
            try:
                asked = json.loads(function.get("arguments") or "{}").get("groups") or []
            except (ValueError, AttributeError):
                continue
            groups.extend(g for g in asked if isinstance(g, str) and g in known and g not in groups)
    return groups
