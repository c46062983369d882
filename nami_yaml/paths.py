"""Paths of the user's files: how they are shown in messages, and how tool-file specs expand.

Not to be confused with ``builtins.workspace.display_path``, which shows a path relative to the
workspace to the model; these are for the person running nami, relative to their current folder.
"""

from __future__ import annotations

import glob as globlib
import os
from pathlib import Path

TOOL_SUFFIXES = (".yaml", ".yml")
# Folders of installed or generated things, not the project's own files: the trust walk does not enter them
# (a repository's node_modules would make every trust check hash megabytes), so nothing is loaded from them.
SKIPPED_FOLDERS = frozenset({".git", "node_modules", ".venv", "venv", ".tox", ".mypy_cache", ".ruff_cache"})


def path_for_messages(path: Path) -> str:
    """``path`` relative to the current folder (as the user would type it), or as given if that fails."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


class Resolver:
    """``Path.resolve()`` for many files in few folders (a thousand tool files): each folder resolved once,
    and a file that is not itself a link is its resolved folder and its name, which is what ``resolve()``
    gives. One instance for one pass over the files: a folder is not looked at again within it."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def __call__(self, path: Path) -> Path:
        return Path(self.text(os.fspath(path)))

    def text(self, path: str) -> str:
        """The resolved path of ``path``, as a string (what most callers compare)."""
        folder, name = os.path.split(path)
        try:
            if name in ("", ".", "..") or os.path.islink(path):
                return str(Path(path).resolve())
        except ValueError:  # a NUL in it: as resolve() would say
            return str(Path(path).resolve())
        return os.path.join(self.folder_text(folder), name)

    def folder(self, folder: Path) -> Path:
        return Path(self.folder_text(os.fspath(folder)))

    def folder_text(self, folder: str) -> str:
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = str(Path(folder or ".").resolve())
        return found


def expand_tool_paths(spec: str, base: Path) -> list[Path]:
    """A file, a folder (its *.yaml/*.yml files, recursively, hidden folders skipped) or a glob; nothing for
    a path the system cannot even look at (too long, say)."""
    try:
        return _expand_tool_paths(spec, base)
    except (OSError, ValueError):
        return []


def _expand_tool_paths(spec: str, base: Path) -> list[Path]:
    target = Path(os.path.expanduser(spec))
    target = target if target.is_absolute() else base / target
    if any(ch in spec for ch in "*?["):
        return sorted(Path(p) for p in globlib.glob(str(target), recursive=True) if Path(p).is_file())
    if target.is_dir():
        found = []
        for root, dirs, files in os.walk(target):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            found.extend(Path(os.path.join(root, f)) for f in sorted(files) if f.endswith(TOOL_SUFFIXES))
        return found
    return [target] if target.exists() else []


def walk(folder: Path, skipped: frozenset[str] = SKIPPED_FOLDERS) -> list[Path]:
    """Every file below ``folder``, sorted: the one walk of a project's folders, which trust fingerprints
    and the loaders read from. It does not enter ``skipped`` folders, nor follow a link to a folder (what
    is behind it may be anywhere and change any time); a link to a file is listed (its content is read)."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in skipped)
        found.extend(Path(root) / name for name in sorted(names))
    return found


def walked(path: Path, folder: Path) -> bool:
    """Whether :func:`walk` of ``folder`` reaches ``path``, without walking: it is below ``folder`` and no
    folder between them is a skipped one or a link."""
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return False
    below = folder
    for part in parts[:-1]:
        below = below / part
        try:
            if part in SKIPPED_FOLDERS or below.is_symlink():
                return False
        except OSError:
            return False
    return bool(parts)
