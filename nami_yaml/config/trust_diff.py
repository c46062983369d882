"""What changed since a project was trusted: which files, and a diff of its YAML and prompt files.

Trusting records, besides the digest that decides trust (trust.py), a snapshot under the state folder
(``$XDG_STATE_HOME/nami/trusted/<hash of the agent.yaml path>/``): the hash of every covered file and a
copy of the reviewable text files (agent.yaml, its prompt, the tool YAML files), each at most
MAX_COPY_BYTES and MAX_SNAPSHOT_BYTES in all. The snapshot only feeds the "what changed" listing shown
before trusting again; it never decides anything, so a missing or damaged one only means no diff.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.display import visible
from nami_yaml.paths import TOOL_SUFFIXES
from nami_yaml.xdg import default_state_dir

MAX_COPY_BYTES = 256_000
MAX_SNAPSHOT_BYTES = 2_000_000
MAX_DIFF_LINES = 200
MAX_HASHED_BYTES = 64_000_000
_MANIFEST = "manifest.json"


def snapshot_folder(config: Path) -> Path:
    key = hashlib.sha256(str(config).encode()).hexdigest()[:32]
    return default_state_dir() / "trusted" / key


INSTRUCTION_NAMES = frozenset({"AGENTS.md", "SKILL.md"})


def reviewable(files: list[Path], prompt: Path | None) -> list[Path]:
    """The files a reviewer reads as text and sees diffs of: YAML files, the prompt, and the instructions of
    AGENTS.md and SKILL.md files (they reach the model as the prompt does)."""
    return [f for f in files if f.suffix in TOOL_SUFFIXES or f == prompt or f.name in INSTRUCTION_NAMES]


def _digest(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        info = path.stat()
        if info.st_size > MAX_HASHED_BYTES:  # a huge blob: its size and time tell a change well enough here
            return f"size {info.st_size}, modified {info.st_mtime_ns}"
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def save_snapshot(config: Path, files: list[Path], texts: list[Path]) -> None:
    """Record what was trusted. Written to a new folder, then swapped in: never half-written."""
    target = snapshot_folder(config)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o700)
    staging = Path(tempfile.mkdtemp(prefix=".snapshot-", dir=target.parent))
    try:
        entries: dict[str, dict[str, str | None]] = {}
        budget = MAX_SNAPSHOT_BYTES
        wanted = set(texts)
        for index, file in enumerate(files):
            entry: dict[str, str | None] = {"sha256": _digest(file), "copy": None}
            if file in wanted:
                try:
                    data = file.read_bytes()
                except OSError:
                    data = None
                if data is not None and len(data) <= min(MAX_COPY_BYTES, budget):
                    name = f"{index:05}.txt"
                    (staging / name).write_bytes(data)
                    os.chmod(staging / name, 0o600)
                    entry["copy"] = name
                    budget -= len(data)
            entries[str(file)] = entry
        (staging / _MANIFEST).write_text(json.dumps({"config": str(config), "files": entries}), encoding="utf-8")
        old = target.with_name(target.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.replace(target, old)
        os.replace(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@dataclass
class Changes:
    added: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    modified: list[Path] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)


def describe(changes: Changes | None, project: Path, most: int = 3) -> str:
    """What changed, in a few words: ``tools/new.yaml added; agent.yaml modified``. Without a snapshot
    to compare with (None), or with nothing listed, it says only that the covered files changed."""
    if not changes:
        return "the files trust covers changed (agent.yaml, its prompt, its tool files or the code beside them)"
    parts = []
    for label, group in (("added", changes.added), ("modified", changes.modified), ("removed", changes.removed)):
        if group:
            names = [visible(shown(file, project)) for file in group[:most]]  # named by the repository
            more = f" and {len(group) - most} more" if len(group) > most else ""
            parts.append(f"{', '.join(names)}{more} {label}")
    return "; ".join(parts)


def changes_since_trusted(config: Path, files: list[Path], texts: list[Path]) -> Changes | None:
    """The files added, removed and modified since the last trust, with a capped unified diff of the
    reviewable ones (named relative to the agent.yaml's folder); None when there is no (readable)
    snapshot to compare with."""
    folder = snapshot_folder(config)
    try:
        manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        before: dict[str, dict[str, str | None]] = manifest["files"]
        if not isinstance(before, dict):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = {str(f): f for f in files}
    found = Changes(
        added=[now[name] for name in sorted(set(now) - set(before))],
        removed=[Path(name) for name in sorted(set(before) - set(now))],
        modified=[now[name] for name in sorted(set(now) & set(before)) if _digest(now[name]) != _entry_hash(before[name])],
    )
    wanted = set(texts)
    for file in [*found.modified, *found.added, *found.removed]:
        if file in wanted or file.suffix in TOOL_SUFFIXES:
            found.diff.extend(_diff(folder, before.get(str(file)), file, config.parent))
    if len(found.diff) > MAX_DIFF_LINES:
        hidden = len(found.diff) - MAX_DIFF_LINES
        found.diff = [*found.diff[:MAX_DIFF_LINES], f"... [{hidden:,} more diff lines not shown]"]
    return found


def _entry_hash(entry: object) -> str | None:
    return entry.get("sha256") if isinstance(entry, dict) else None  # type: ignore[return-value]


def shown(file: Path, project: Path) -> str:
    try:
        return os.path.relpath(file, project)
    except ValueError:
        return str(file)


def _diff(folder: Path, entry: object, file: Path, project: Path) -> list[str]:
    name = shown(file, project)
    copy = entry.get("copy") if isinstance(entry, dict) else None
    old_lines: list[str] = []
    if entry is not None:
        if not isinstance(copy, str) or "/" in copy or copy.startswith("."):
            return [f"(no copy of the trusted {name} was kept: too large; review it whole)"]
        try:
            old_lines = (folder / copy).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return [f"(the trusted copy of {name} is missing; review it whole)"]
    try:
        new_lines = file.read_text(encoding="utf-8", errors="replace").splitlines() if file.exists() else []
    except OSError:
        new_lines = []
    return list(difflib.unified_diff(old_lines, new_lines, f"{name} (trusted)", f"{name} (now)", lineterm=""))
