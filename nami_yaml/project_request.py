"""Which project: the one shape every front end (the CLI, batch and its workers, ``nami mcp serve``, doctor,
the Python API) says it in, handed to ``nami_yaml.app.open_project`` (and to ``config.settings.load_settings``
for the settings alone). A plain frozen value of strings and paths, so a batch job carries it to a worker or
a Ray node as JSON. A leaf: it imports nothing else of nami_yaml.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ProjectRequest:
    """``config``: the agent.yaml (None: $NAMI_CONFIG, else the nearest one from ``cwd`` upwards when
    ``discover``); ``cwd``: where nami was started (None: the current folder, read when opened); ``env``: the
    environment to read (None: this process's); ``tools``: extra tool files, folders or globs; ``target``:
    every call of a targeted tool runs on it; ``agent``: a named agent of the project (agent.yaml
    ``agents:``) instead of the top-level one; ``flags``: settings by dotted key, above every file (the
    command line's ``--model`` is ``{"model.name": …}``); ``user_config``: read the user's config too."""

    config: str | None = None
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    tools: tuple[str, ...] = ()
    target: str | None = None
    agent: str | None = None
    flags: Mapping[str, Any] = field(default_factory=dict)
    discover: bool = True
    user_config: bool = True

    def __post_init__(self) -> None:
        # Normalised once, so two requests for the same project compare equal and nothing shares a caller's
        # mutable list or dict. Flags that are None say nothing (a flag not given).
        set_field = object.__setattr__
        set_field(self, "config", None if self.config is None else str(self.config))
        set_field(self, "cwd", None if self.cwd is None else Path(self.cwd))
        set_field(self, "tools", tuple(str(tool) for tool in self.tools))
        set_field(self, "flags", {key: value for key, value in dict(self.flags).items() if value is not None})

    @property
    def folder(self) -> Path:
        """Where it is opened from: ``cwd``, else the current folder."""
        return self.cwd if self.cwd is not None else Path.cwd()

    @property
    def environment(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    def but(self, **changes: Any) -> ProjectRequest:
        """The same request with some fields changed (``request.but(discover=False)``)."""
        return replace(self, **changes)

    def with_flags(self, flags: Mapping[str, Any]) -> ProjectRequest:
        """The same request with more settings by dotted key (later ones win)."""
        return replace(self, flags={**self.flags, **flags})

    def to_json(self) -> dict[str, Any]:
        """As plain JSON data, for a batch job (the environment is never sent: a worker reads its own)."""
        return {"config": self.config, "cwd": None if self.cwd is None else str(self.cwd), "tools": list(self.tools),
                "target": self.target, "agent": self.agent, "flags": dict(self.flags), "discover": self.discover,
                "user_config": self.user_config}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProjectRequest:
        return cls(config=data.get("config"), cwd=Path(data["cwd"]) if data.get("cwd") else None,
                   tools=tuple(data.get("tools") or ()), target=data.get("target"), agent=data.get("agent"),
                   flags=dict(data.get("flags") or {}), discover=bool(data.get("discover", True)),
                   user_config=bool(data.get("user_config", True)))


def request_for(config: str | Path | None = None, *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                tools: Sequence[str] = (), flags: Mapping[str, Any] | None = None, **more: Any) -> ProjectRequest:
    """A request from the keywords the Python API has always taken (``open_project(config, cwd=…)``)."""
    return ProjectRequest(config=None if config is None else str(config), cwd=cwd, env=env, tools=tuple(tools),
                          flags=dict(flags or {}), **more)
