"""What a running tool may know about its surroundings. Built once per agent by nami_yaml.app."""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from nami_yaml.cancel import CancelToken
from nami_yaml.policy.sensitive_paths import ProtectedPaths
from nami_yaml.sandbox_settings import SandboxSettings

if TYPE_CHECKING:
    from nami_yaml.config.skills import Skill
    from nami_yaml.registry.tool import DocSource


def home_folder(env: Mapping[str, str] | None = None) -> Path:
    """$HOME if it is an absolute path, else the home folder of the user's password entry."""
    env = os.environ if env is None else env
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return Path(home)
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return Path(os.path.expanduser("~"))


def xdg_folder(name: str, default: str, env: Mapping[str, str] | None = None) -> Path:
    """An XDG base folder: ``$name`` when absolute, else ``~/default``.

    The XDG spec says relative values are invalid and must be ignored. Taking them would let the current
    folder (a cloned repository) decide where nami's trust store and user config are.
    """
    env = os.environ if env is None else env
    value = env.get(name, "")
    return Path(value) if os.path.isabs(value) else home_folder(env) / default


def default_state_dir() -> Path:
    return xdg_folder("XDG_STATE_HOME", ".local/state") / "nami"


# The saved-output folders this process made (or first found as real folders of its own): path -> (device,
# inode). The path is told to the model, so everything that later opens the folder checks it is still the
# same folder, never a symlink or another folder put in its place.
_SPILL_FOLDERS: dict[str, tuple[int, int]] = {}
_SPILL_LOCK = threading.Lock()


def _own_folder(info: os.stat_result) -> bool:
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def claim_spill_dir(path: Path, *, create: bool = True) -> bool:
    """Make ``path`` this process's saved-output folder: create it (0o700) if it is missing and ``create``,
    or accept it if it is already a real folder of this user (never a symlink). Returns whether it is
    ours, i.e. the folder nami remembers, unchanged."""
    key = os.path.abspath(path)
    with _SPILL_LOCK:
        known = _SPILL_FOLDERS.get(key)
        try:
            info = os.lstat(key)
        except FileNotFoundError:
            if known is not None or not create:
                return False  # ours was removed or moved: whatever appears there later is not ours
            try:
                os.makedirs(os.path.dirname(key), exist_ok=True)
                os.mkdir(key, 0o700)  # exclusive: fails if something was planted meanwhile
                info = os.lstat(key)
            except OSError:
                return False
        except OSError:
            return False
        if not _own_folder(info):
            return False
        identity = (info.st_dev, info.st_ino)
        if known is None:
            _SPILL_FOLDERS[key] = identity
            return True
        return known == identity


def spill_dir_is_ours(path: Path) -> bool:
    """Whether ``path`` is still the saved-output folder nami made (or found), never creating it."""
    return claim_spill_dir(path, create=False)


def open_spill_dir(path: Path) -> int:
    """A descriptor of the saved-output folder, checked to be the one nami made (raises OSError)."""
    if not claim_spill_dir(path):
        raise OSError(f"{path} is not nami's saved-output folder")
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    info = os.fstat(fd)
    if _SPILL_FOLDERS.get(os.path.abspath(path)) != (info.st_dev, info.st_ino):
        os.close(fd)
        raise OSError(f"{path} was replaced")
    return fd


def session_spill_dir(base: Path | None = None, *, keep_days: float = 7.0, name: str | None = None,
                      keep: Callable[[str], bool] | None = None) -> Path:
    """A folder for this session's saved tool output, created now (0o700, exclusively) or, for a recorded
    session continued (``name``: its id), taken up again if it is still a real folder of this user.

    Per session, because the read tools may read it: one project's saved output must not be readable
    from another project's session. Created at once, because its path is told to the model: created on
    first use, a symlink planted there first would have made whatever it points to readable. A recorded
    session's folder is named by its id, so a continued session can still read the paths its earlier
    results named. Folders older than ``keep_days`` are removed, except those of sessions still kept
    (``keep(id)`` is true). If the shared folder is not a real folder owned by this user (a symlink
    planted by a command, say), a private folder in the system's temporary directory is used.
    """
    base = base or default_state_dir() / "output"
    try:
        base.mkdir(parents=True, exist_ok=True)
        usable = _own_folder(os.lstat(base))
    except OSError:
        usable = False
    if usable:
        os.chmod(base, 0o700)
        cutoff = time.time() - keep_days * 86400
        for old in base.iterdir():
            with contextlib.suppress(OSError):
                entry = os.lstat(old)
                if (stat.S_ISDIR(entry.st_mode) and old.name.startswith("session-") and entry.st_mtime < cutoff
                        and not (keep is not None and keep(old.name.removeprefix("session-")))):
                    shutil.rmtree(old, ignore_errors=True)
        if name is not None:
            named = base / f"session-{name}"
            if claim_spill_dir(named):
                return _removed_at_exit_if_empty(named)
        else:
            for _ in range(5):
                folder = base / f"session-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
                if not os.path.lexists(folder) and claim_spill_dir(folder):
                    return _removed_at_exit_if_empty(folder)
    folder = Path(tempfile.mkdtemp(prefix="nami-output-"))
    claim_spill_dir(folder)
    return _removed_at_exit_if_empty(folder)


def _removed_at_exit_if_empty(folder: Path) -> Path:
    """Most commands (`nami check`, `nami tools list`, a run whose output was never cut) save nothing:
    their folder goes when the process ends instead of piling up for a week. rmdir removes only an empty
    folder, so nothing saved is lost."""
    atexit.register(_remove_if_empty, str(folder))
    return folder


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(folder)


@dataclass(frozen=True)
class EnvScrub:
    """More host variables to keep from tools than nami's own rules catch: shell-style patterns (``*``,
    ``?``, case-insensitive) for names, and for whole values. From ``env_scrub:`` in the config files."""

    names: tuple[str, ...] = ()
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSettings:
    """Limits and knobs for tools, from agent.yaml ``limits:`` and ``tools:``; defaults are safe."""

    default_timeout: float = 120.0
    max_output: int = 50_000  # bytes of a tool's output the model sees (head + tail)
    max_saved_output: int = 64_000_000  # bytes of one call's output saved to files; past it the tool stops
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
    env_scrub: EnvScrub = field(default_factory=EnvScrub)
    # Asked before a module from a tool folder is imported (the file's path): why it must not run (trust
    # never covered it, or the trusted code changed since), or None. Set when agent.yaml needed trust.
    code_check: Callable[[Path], str | None] | None = None
    # Where a write is code execution (the config, tool folders, .git/, ...): such a write needs the
    # approval an exec call needs. The defaults protect the folder and file names every project has.
    protected_paths: ProtectedPaths = field(default_factory=ProtectedPaths)
    spill_dir: Path = field(default_factory=lambda: default_state_dir() / "output")
    # agent.yaml's and the user config's ``sandbox:``: every process a tool starts runs in the sandbox
    # runners/sandbox plans from these and the tool's own keys (by default: where bubblewrap works).
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
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
