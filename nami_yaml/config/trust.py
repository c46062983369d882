"""Trusting a project's agent.yaml before nami runs what it declares.

An agent.yaml found by walking up from the current folder may come from a repository someone else wrote:
its tools are commands, its entry points are Python, and it can choose the endpoint and the permissions.
Like direnv, nami runs tools from such a file only after the user has trusted it, and trusts exactly the
bytes it was shown: the agent.yaml, its system prompt, its tool files and the Python files beside them. A
change to any of them asks again. A file named with --config or $NAMI_CONFIG, and the user config, are the
user's own choice and need no trust step.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.config.agents import agent_files, read_agents
from nami_yaml.config.agents import prompt_files as agent_prompt_files
from nami_yaml.config.effective import Effective
from nami_yaml.config.loaded import loaded_files
from nami_yaml.config.trust_diff import reviewable, save_snapshot
from nami_yaml.xdg import default_state_dir

FOUND_BY_WALKING = "found from the current folder"
OUTSIDE = "   <- OUTSIDE the project folder"


def trust_store() -> Path:
    return default_state_dir() / "trusted.json"


def needs_trust(effective: Effective) -> bool:
    return effective.config_path is not None and effective.found_by == FOUND_BY_WALKING


COMPILED_SUFFIXES = frozenset({".pyc", ".pyo", ".so", ".pyd"})  # Python may run these instead of the .py
MAX_HASHED_BYTES = 64_000_000  # beyond this, files count by size, times and inode only


def tool_folders(effective: Effective) -> set[Path]:
    """The folders of the project's tool files (resolved): entry points import their Python from there."""
    return set(loaded_files(effective, project_only=True).tool_folders)


def covered_files(effective: Effective) -> list[Path]:
    """Every file of the project that decides what runs or what the model reads: what config/loaded.py
    lists (agent.yaml, its prompt, its tool files, everything the walk reaches below the folders of its
    tool files, skills and MCP servers' code). Files in SKIPPED_FOLDERS or behind folder links are
    neither covered nor loaded (see code_check). Tool files added with --tools or by the user config are
    the user's own: not covered."""
    assert effective.config_path is not None
    files = set(loaded_files(effective, project_only=True).covered())
    files.update(agent_files(effective.config_path))  # named agents: their prompts, tools and rights
    files.update(agent_prompt_files(read_agents(effective)[0]))
    return sorted(files)


def fingerprint(files: list[Path], *, budget: int = MAX_HASHED_BYTES) -> str:
    return hashed(files, budget=budget)[0]


def hashed(files: list[Path], *, budget: int = MAX_HASHED_BYTES) -> tuple[str, dict[Path, str]]:
    """The fingerprint of ``files``, and the SHA-256 of each file whose bytes it hashed (an MCP server's
    child checks what it imports against those: see runners/vetting.py)."""
    digest = hashlib.sha256()
    each: dict[Path, str] = {}
    for file in files:
        digest.update(str(file).encode() + b"\0")
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode):
                # A FIFO would block the read forever; a device is nobody's tool code.
                digest.update(f"not a regular file: {stat.S_IFMT(info.st_mode)}".encode())
            elif info.st_size <= budget:
                content = hashlib.sha256(file.read_bytes())
                digest.update(content.digest())
                each[file] = content.hexdigest()
                budget -= info.st_size
            else:
                # Size and mtime can be put back after an edit (touch -d); the inode change time cannot
                # be set by users, and a replaced file has a new inode.
                digest.update(f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_dev}:{info.st_ino}".encode())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest(), each


def _load() -> dict[str, str]:
    store = trust_store()
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        # Keep the damaged file for the user; trusting nothing from it fails safe (nami asks again).
        with contextlib.suppress(OSError):
            os.replace(store, store.with_name(store.name + ".corrupt"))
        return {}
    return data


@dataclass
class TrustState:
    config: Path
    digest: str
    known: str | None  # the digest trusted before, if any
    files: list[Path] = field(default_factory=list)  # what the digest covers
    texts: list[Path] = field(default_factory=list)  # of those, the YAML and prompt files (diffed on a change)

    @property
    def trusted(self) -> bool:
        return self.known == self.digest

    @property
    def changed(self) -> bool:
        return self.known is not None and not self.trusted


def trust_state(effective: Effective, *, fresh: bool = False) -> TrustState:
    """The project's fingerprint against the one it was trusted with. The files are walked and hashed once
    per settings value; ``fresh``: again, to see them as they are now (a check while a run goes on). What
    was trusted is read from the store every time (``nami trust`` in another shell counts at once)."""
    assert effective.config_path is not None
    if fresh or "trust" not in effective.memo:
        files = covered_files(effective)
        effective.memo["trust"] = files, fingerprint(files)
    files, digest = effective.memo["trust"]
    return TrustState(effective.config_path, digest, known_digest(effective.config_path), list(files),
                      reviewable(files, prompt_file(effective)))


def known_digest(path: Path) -> str | None:
    """The digest ``path`` (an agent.yaml, a task file) was last trusted with, if any."""
    return _load().get(str(path))


def prompt_file(effective: Effective) -> Path | None:
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    prompt = project_file.data.get("system_file") if project_file else None
    return Path(prompt) if prompt else None


def code_check(effective: Effective) -> Callable[[Path], str | None]:
    """For RuntimeContext.code_check: asked before Python from a tool folder is imported, it refuses a
    file trust does not cover (in a folder trust skips, like node_modules, or behind a symlinked folder)
    and any import once the project's trusted files have changed (the model may write them mid-session)."""
    assert effective.config_path is not None
    config = effective.config_path
    folders = [os.path.normpath(folder) for folder in tool_folders(effective)]

    def check(file: Path) -> str | None:
        path = os.path.normpath(file)
        if not any(path.startswith(folder + os.sep) for folder in folders):
            return None  # not the project's tool code
        files = covered_files(effective)
        if Path(path) not in set(files):
            return (f"{file} is not covered by the trust given to {config} (it is in a folder trust skips, "
                    "behind a symlinked folder, or new); nami does not import it")
        if fingerprint(files) != _load().get(str(config)):
            return (f"the project's tool code changed since it was trusted ({config}); nothing from it is "
                    "imported until it is trusted again (nami trust)")
        return None

    return check


def remember(state: TrustState) -> None:
    """Record the trust atomically, under a lock so two sessions trusting at once both stay recorded."""
    store = trust_store()
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store.with_name(store.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load()
        data[str(state.config)] = state.digest
        temporary = store.with_name(f".{store.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.chmod(temporary, 0o600)
        os.replace(temporary, store)
        if state.files:
            with contextlib.suppress(OSError):  # the snapshot only serves the next diff; trust is recorded
                save_snapshot(state.config, state.files, state.texts)
