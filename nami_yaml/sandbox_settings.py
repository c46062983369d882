"""The ``sandbox:`` keys as values: the project's and user's settings, and what one tool or MCP server
declares it needs. A leaf: runtime.py carries the settings, config/ reads them from the files, and
runners/sandbox turns them, with a tool's needs, into the plan of one call.

Paths stay as written (``~``, ``$NAME``) until a plan expands them with the host environment of the run:
:func:`expand_paths` is the one place that does it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# From the most permissive to the strictest; combining two layers keeps the stricter (config/sandbox.py).
MODES = ("off", "auto", "required", "read-only")
ESCALATIONS = ("ask", "never")
NETWORK_OFF, NETWORK_ON = False, True

_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_ONLY_VARIABLE = re.compile(r"^\$(?:\{\w+\}|\w+)$")


@dataclass(frozen=True)
class SandboxSettings:
    """agent.yaml's and the user config's ``sandbox:``, combined (see config/sandbox.py).

    ``mode``: auto (sandboxed where bubblewrap works, a notice where not), required (a process tool
    refuses to run without the sandbox), read-only (required, and the workspace read-only too), off.
    ``network``: the network of the bash built-in and of batch check commands (tools declare their own).
    ``hide``: more paths hidden, on top of the defaults. ``reads``: hidden paths shown (read-only) to every
    call. ``writable``: more writable paths, for every call. ``escalate``: whether a person is offered to
    rerun a call the sandbox stopped, unsandboxed. ``reason``: why ``mode`` is off for one call (a person
    allowed that rerun), never read from a file.
    """

    mode: str = "auto"
    network: bool = False
    hide: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    escalate: str = "ask"
    reason: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> SandboxSettings:
        data = data or {}
        return cls(mode=mode_name(data.get("mode", "auto")), network=bool(data.get("network", False)),
                   hide=tuple(data.get("hide") or ()), reads=tuple(data.get("reads") or ()),
                   writable=tuple(data.get("writable") or ()), escalate=str(data.get("escalate", "ask")))

    def as_mapping(self) -> dict[str, Any]:
        return {"mode": self.mode, "network": self.network, "hide": list(self.hide), "reads": list(self.reads),
                "writable": list(self.writable), "escalate": self.escalate}


def mode_name(value: Any) -> str:
    """``mode:`` as written: YAML 1.1 reads a bare ``off`` as false."""
    return "off" if value is False else str(value)


@dataclass(frozen=True)
class SandboxNeeds:
    """A tool file's (or an MCP server's) own ``sandbox:``: the network, hidden paths it reads, and
    paths it writes besides the workspace. ``origin`` names the file that declares them, for messages."""

    network: bool = False
    reads: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    origin: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, origin: str = "") -> SandboxNeeds:
        data = data or {}
        return cls(network=bool(data.get("network", False)), reads=tuple(data.get("reads") or ()),
                   writable=tuple(data.get("writable") or ()), origin=origin)

    @property
    def declared(self) -> bool:
        return self.network or bool(self.reads or self.writable)

    def as_mapping(self) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        if self.network:
            shown["network"] = True
        if self.reads:
            shown["reads"] = list(self.reads)
        if self.writable:
            shown["writable"] = list(self.writable)
        return shown


def expand_paths(written: Iterable[str], env: Mapping[str, str], base: Path) -> list[Path]:
    """Each path with ``~`` and ``$NAME`` / ``${NAME}`` taken from ``env``, made absolute against ``base``
    and normalized (links are not followed here). An entry naming an unset variable names nothing and is
    left out; an entry that is only a variable holding a list (``$KUBECONFIG``: a:b) gives each path."""
    found: list[Path] = []
    for text in written:
        unset = False

        def value(match: re.Match[str]) -> str:
            nonlocal unset
            name = match.group(1) or match.group(2)
            if name not in env:
                unset = True
                return ""
            return env[name]

        expanded = _VARIABLE.sub(value, text)
        if unset or not expanded:
            continue
        parts = expanded.split(os.pathsep) if _ONLY_VARIABLE.match(text) else [expanded]
        for part in parts:
            if not part:
                continue
            if part == "~" or part.startswith("~/"):
                part = _home(env) + part[1:]
            path = Path(part)
            found.append(Path(os.path.normpath(path if path.is_absolute() else base / path)))
    return found


def _home(env: Mapping[str, str]) -> str:
    home = env.get("HOME", "")
    return home if os.path.isabs(home) else os.path.expanduser("~")
