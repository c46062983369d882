"""What a running tool may know about its surroundings. Built once per agent by nami_yaml.app."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from nami_yaml.cancel import CancelToken

if TYPE_CHECKING:
    from nami_yaml.config.skills import Skill
    from nami_yaml.registry.tool import DocSource


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "nami"


def session_spill_dir(base: Path | None = None, *, keep_days: float = 7.0, name: str | None = None,
                      keep: Callable[[str], bool] | None = None) -> Path:
    """A folder for this session's saved tool output, created on first use.

    Per session, because the read tools may read it: one project's saved output must not be readable
    from another project's session. A recorded session's folder is named by its id (``name``), so a
    continued session can still read the paths its earlier results named. Folders older than
    ``keep_days`` are removed, except those of sessions still kept (``keep(id)`` is true). If the shared
    folder is not a real folder owned by this user (a symlink planted by a command, say), a private
    folder in the system's temporary directory is used instead.
    """
    base = base or default_state_dir() / "output"
    try:
        base.mkdir(parents=True, exist_ok=True)
        info = os.lstat(base)
        usable = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
    except OSError:
        usable = False
    if not usable:
        return Path(tempfile.mkdtemp(prefix="nami-output-"))
    os.chmod(base, 0o700)
    cutoff = time.time() - keep_days * 86400
    for old in base.iterdir():
        with contextlib.suppress(OSError):
            entry = os.lstat(old)
            if (stat.S_ISDIR(entry.st_mode) and old.name.startswith("session-") and entry.st_mtime < cutoff
                    and not (keep is not None and keep(old.name.removeprefix("session-")))):
                shutil.rmtree(old, ignore_errors=True)
    if name is not None:
        return base / f"session-{name}"
    return base / f"session-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"


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
    """The fixed workspace root, settings, and the cancel switch (the run's, or one call's: ``for_call``).

    ``workspace`` is resolved once at start; nothing the model sends can change it.
    ``protected_env`` names host variables never given to a tool, even when a tool lists them in
    ``env_passthrough`` (the model's API key variable, for one).
    """

    workspace: Path
    settings: ToolSettings = field(default_factory=ToolSettings)
    host_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    protected_env: frozenset[str] = frozenset()
    spill_dir: Path = field(default_factory=lambda: default_state_dir() / "output")
    cancel: CancelToken = field(default_factory=CancelToken)
    # Text the model reads only when it asks (the tool_docs and skill built-ins): tools' docs by tool
    # name, and the agent's skills by name.
    tool_docs: Mapping[str, DocSource] = field(default_factory=dict)
    skills: Mapping[str, Skill] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).resolve()

    def for_call(self) -> RuntimeContext:
        """The same context with a cancel switch of the call's own, also set when the run is cancelled."""
        return replace(self, cancel=self.cancel.child())
