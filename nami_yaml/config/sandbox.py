"""``sandbox:`` of agent.yaml and the user config: how the two combine, and what the trust summary says.

How the layers combine (as rules do in policy/layers.py, the user's word weighs most):
- ``mode``, ``network``, ``escalate``: a value set in one file is taken; set in both, the stricter wins
  (mode: read-only > required > auto > off; network: false > true; escalate: never > ask). So the user's
  config may widen or narrow nami's defaults; a project's agent.yaml may always narrow, and widens only
  what the user's config leaves unset (``mode: off`` in a cloned project is shown when it asks for trust).
- ``hide``, ``reads``, ``writable``: the lists add up. A project can hide more, never less; what it makes
  readable or writable is shown when it asks for trust, as a tool file's ``reads:`` and ``network:`` are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.sandbox_settings import ESCALATIONS, MODES, SandboxNeeds, SandboxSettings, mode_name

LIST_KEYS = ("hide", "reads", "writable")
NEEDS_KEYS = ("reads", "writable")


def absolute_paths(data: dict[str, Any], base: Path) -> None:
    """Make the relative paths of ``sandbox:`` (and of each MCP server's) relative to the file's folder;
    ``~`` and ``$NAME`` stay as written, to be expanded with the host environment of each run."""
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict):
        _absolute(sandbox, LIST_KEYS, base)
    for entry in (data.get("mcp_servers") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("sandbox"), dict):
            _absolute(entry["sandbox"], NEEDS_KEYS, base)


def _absolute(section: dict[str, Any], keys: tuple[str, ...], base: Path) -> None:
    for key in keys:
        if isinstance(section.get(key), list):
            section[key] = [p if p.startswith(("/", "~", "$")) else os.path.normpath(base / p) for p in section[key]]


def combine(user: Mapping[str, Any] | None, project: Mapping[str, Any] | None) -> dict[str, Any]:
    """The effective ``sandbox:`` of the user config's and the project's (either may be None)."""
    user, project = (_normalized(layer) for layer in (user, project))
    combined: dict[str, Any] = {}
    for key, order in (("mode", MODES), ("escalate", ESCALATIONS)):
        given = [layer[key] for layer in (user, project) if key in layer]
        combined[key] = max(given, key=order.index) if given else SandboxSettings().as_mapping()[key]
    networks = [layer["network"] for layer in (user, project) if "network" in layer]
    combined["network"] = all(networks) if networks else False
    for key in LIST_KEYS:
        combined[key] = list(dict.fromkeys([*(user.get(key) or ()), *(project.get(key) or ())]))
    return combined


def _normalized(layer: Mapping[str, Any] | None) -> dict[str, Any]:
    layer = dict(layer or {})
    if "mode" in layer:
        layer["mode"] = mode_name(layer["mode"])
    return layer


def sandbox_settings(values: Mapping[str, Any] | None) -> SandboxSettings:
    """The settings a RuntimeContext carries, from the effective ``sandbox`` value (Effective.get)."""
    return SandboxSettings.from_mapping(values)


@dataclass(frozen=True)
class DeclaredNeeds:
    """A tool's (or MCP server's) ``sandbox:``, with its name and where it is declared, for trust."""

    name: str
    source: str
    needs: SandboxNeeds


def trust_lines(project: Mapping[str, Any] | None, declared: Iterable[DeclaredNeeds] = ()) -> list[str]:
    """What the trust summary says about a project's sandbox: every key of its agent.yaml that widens
    what its processes may do (``mode: off``, ``network: true``, ``reads``, ``writable``),
    and each of its tools and MCP servers that declares the network or paths. Empty when it widens nothing.
    Any change to these changes the files trust fingerprints, so it asks again."""
    lines: list[str] = []
    project = _normalized(project)
    widened = []
    if project.get("mode") == "off":
        widened.append("mode: off (its tools run without the sandbox)")
    if project.get("network") is True:
        widened.append("network: true (the bash built-in reaches the network)")
    for key in ("reads", "writable"):
        if project.get(key):
            widened.append(f"{key}: {', '.join(project[key])}")
    if widened:
        lines.append("  widens the sandbox of every call:")
        lines.extend(f"    {item}" for item in widened)
    tools = [item for item in declared if item.needs.declared]
    if tools:
        lines.append("  tools that need more than the sandbox gives:")
        for item in tools:
            wants = []
            if item.needs.network:
                wants.append("the network")
            if item.needs.reads:
                wants.append(f"reads {', '.join(item.needs.reads)}")
            if item.needs.writable:
                wants.append(f"writes {', '.join(item.needs.writable)}")
            lines.append(f"    {item.name} ({item.source}): {'; '.join(wants)}")
    return lines
