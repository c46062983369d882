"""How Python code from tool folders is imported: from source only, and only when trust allows it.

Entry points live in tool folders (``tools/mod.py`` beside ``tools/mod.yaml``). Every module found in one
of those folders, by the entry point's import or by any import later, goes through ``ImportGuard``:

- the folder's check (``RuntimeContext.code_check``, set when the project's agent.yaml needed trust) is
  asked first, so a module trust never saw (in a folder trust skips, such as ``node_modules``, or added
  after trusting) or one changed since trusting is refused before any of its code runs;
- a ``.py`` file is compiled from its source every time, never from ``__pycache__``: nami writes no
  bytecode into the project (which would change what trust fingerprints), and a shipped ``.pyc`` that
  differs from the reviewed source is never run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

CodeCheck = Callable[[Path], "str | None"]


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the source each time; reads and writes no bytecode cache."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        return None  # never called by get_code above; kept inert in case a caller asks


class ImportGuard(importlib.abc.MetaPathFinder):
    """A finder placed first on ``sys.meta_path``: it asks the normal path finder where a module is and,
    when that is in a watched tool folder, vets it; anything else it leaves to the usual finders."""

    def __init__(self) -> None:
        self._folders: dict[str, CodeCheck | None] = {}
        self._lock = threading.Lock()

    def watch(self, folder: Path, check: CodeCheck | None) -> None:
        with self._lock:
            self._folders[os.path.normpath(folder)] = check

    def _folder_of(self, origin: str) -> tuple[bool, CodeCheck | None]:
        path = os.path.normpath(origin)
        with self._lock:
            for folder, check in self._folders.items():
                if path.startswith(folder + os.sep):
                    return True, check
        return False, None

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not self._folders:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.has_location or not spec.origin:
            return None  # the usual finders decide, exactly as without this guard
        watched, check = self._folder_of(spec.origin)
        if not watched:
            return None
        problem = check(Path(spec.origin)) if check is not None else None
        if problem:
            raise ImportError(problem, name=fullname, path=spec.origin)
        if isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = SourceOnlyLoader(fullname, spec.origin)
            spec.cached = None
        return spec


_GUARD = ImportGuard()
_install_lock = threading.Lock()


def guard_folder(folder: Path, check: CodeCheck | None) -> None:
    """Vet every later import of a module found in ``folder`` (installs the guard on first use)."""
    with _install_lock:
        if _GUARD not in sys.meta_path:
            sys.meta_path.insert(0, _GUARD)
    _GUARD.watch(folder, check)
