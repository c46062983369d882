"""What a running tool may know about its surroundings. Built once per session by the CLI."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "nami"


@dataclass(frozen=True)
class ToolSettings:
    """Limits and knobs for tools, from agent.yaml ``limits:`` and ``tools:``; defaults are safe."""

    default_timeout: float = 120.0
    max_output: int = 50_000  # bytes of a tool's output the model sees (head + tail)
    bash_timeout: float = 120.0
    bash_max_timeout: float = 600.0
    fetch_allow_hosts: tuple[str, ...] = ()
    fetch_max_bytes: int = 5_000_000
    fetch_timeout: float = 30.0


@dataclass
class RuntimeContext:
    """The fixed workspace root, settings, and the session's cancel switch.

    ``workspace`` is resolved once at start; nothing the model sends can change it.
    ``protected_env`` names host variables never given to a tool, even when a tool lists them in
    ``env_passthrough`` (the model's API key variable, for one).
    """

    workspace: Path
    settings: ToolSettings = field(default_factory=ToolSettings)
    host_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    protected_env: frozenset[str] = frozenset()
    spill_dir: Path = field(default_factory=lambda: default_state_dir() / "output")
    cancel: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()
