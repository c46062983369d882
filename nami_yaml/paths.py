"""Paths of the user's files: how they are shown in messages, and how tool-file specs expand.

Not to be confused with ``builtins.workspace.display_path``, which shows a path relative to the
workspace to the model; these are for the person running nami, relative to their current folder.
"""

from __future__ import annotations

import glob as globlib
import os
from pathlib import Path

TOOL_SUFFIXES = (".yaml", ".yml")


def path_for_messages(path: Path) -> str:
    """``path`` relative to the current folder (as the user would type it), or as given if that fails."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def expand_tool_paths(spec: str, base: Path) -> list[Path]:
    """A file, a folder (its *.yaml/*.yml files, recursively, hidden folders skipped) or a glob."""
    target = Path(os.path.expanduser(spec))
    target = target if target.is_absolute() else base / target
    if any(ch in spec for ch in "*?["):
        return sorted(Path(p) for p in globlib.glob(str(target), recursive=True) if Path(p).is_file())
    if target.is_dir():
        found = []
        for root, dirs, files in os.walk(target):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            found.extend(Path(root) / f for f in sorted(files) if f.endswith(TOOL_SUFFIXES))
        return found
    return [target] if target.exists() else []
