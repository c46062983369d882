"""What grep and glob look at: glob patterns, the folder walk and its skip rules (hidden entries,
node_modules, __pycache__, simple .gitignore patterns, binary and oversized files).

The walk is the reference for both engines: the Python engine lists its files (Walk.files), and what
ripgrep finds is held to the same rules afterwards (Walk.admits).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.builtins.glob_match import glob_matcher
from nami_yaml.builtins.workspace import is_within
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

MAX_FILE_BYTES = 20_000_000
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
_SNIFF = 8192


# ---------------------------------------------------------------- glob patterns

def compile_glob(pattern: str, *, anchored: bool | None = None) -> Callable[[str], bool]:
    """A matcher for a relative POSIX path; gitignore-style: a pattern without ``/`` matches the file name
    at any depth, one with ``/`` matches the whole path from the search folder. ``**`` spans folders,
    ``*`` and ``?`` stay within one, ``[abc]`` and ``{a,b}`` work as in shells."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern or pattern.startswith("/"):
        raise ToolError(f"glob pattern {pattern!r} must be relative to the search folder (use path= for "
                        "the folder), e.g. '**/*.py' or '*.md'")
    if anchored is None:
        anchored = "/" in pattern.rstrip("/")
    matches = glob_matcher(pattern.rstrip("/"))  # in time proportional to the path: see glob_match
    if anchored:
        return matches
    return lambda rel: matches(rel.rsplit("/", 1)[-1])


# ---------------------------------------------------------------- the walk

@dataclass
class _IgnoreRule:
    base: Path
    match: Callable[[str], bool]
    dir_only: bool
    prefix: str = field(init=False, repr=False)  # base as a string ending in a separator

    def __post_init__(self) -> None:
        self.prefix = os.path.join(self.base, "")  # plain string checks: _ignored_by runs for every entry


@dataclass
class Walk:
    root: Path
    ctx: RuntimeContext
    rules: list[_IgnoreRule] = field(default_factory=list)

    # admits(): for each folder (a string), the rules for its entries, or None if the walk skips it.
    _folders: dict[str, list[_IgnoreRule] | None] = field(default_factory=dict, init=False, repr=False)

    def _above(self) -> list[_IgnoreRule]:
        # .gitignore files above the search folder apply too, but only up to the workspace root.
        above = [p for p in reversed(self.root.parents) if is_within(p, self.ctx.workspace)]
        return [rule for folder in above for rule in _read_gitignore(folder)]

    def files(self) -> Iterator[Path]:
        """Regular files under root in path order, as ``rg --sort path`` would list them."""
        self.rules = self._above()
        yield from self._walk(self.root)

    def admits(self, file: Path) -> bool:
        """Whether files() would list ``file``, a normalised path of a regular file (as ripgrep reports
        them): the same hidden, skipped-folder and .gitignore rules, checked along its path from root."""
        full = str(file)
        folder, _, name = full.rpartition(os.sep)
        if not full.startswith(os.path.join(self.root, "")) or name.startswith("."):
            return False
        rules = self._entered(folder or os.sep)
        return rules is not None and not _ignored_by(rules, file, False)

    def _entered(self, folder: str) -> list[_IgnoreRule] | None:
        if folder not in self._folders:
            rules = None
            if folder == str(self.root):
                rules = self._above() + _read_gitignore(self.root)
            elif folder.startswith(os.path.join(self.root, "")):
                parent, _, name = folder.rpartition(os.sep)
                outer = self._entered(parent or os.sep)
                if (outer is not None and not name.startswith(".") and name not in SKIP_DIRS
                        and not _ignored_by(outer, folder, True)):
                    rules = outer + _read_gitignore(Path(folder))
            self._folders[folder] = rules
        return self._folders[folder]

    def _walk(self, folder: Path) -> Iterator[Path]:
        if self.ctx.cancel.is_set():
            raise ToolError("search interrupted")
        added = _read_gitignore(folder)
        self.rules.extend(added)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            # Symlinks are never followed: they are how a path would leave the workspace.
            if entry.is_symlink() or entry.name.startswith(".") or self._ignored(Path(entry.path), entry):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    yield from self._walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
        del self.rules[len(self.rules) - len(added):]

    def _ignored(self, path: Path, entry: os.DirEntry[str]) -> bool:
        return _ignored_by(self.rules, path, entry.is_dir(follow_symlinks=False))


def _ignored_by(rules: list[_IgnoreRule], path: Path | str, is_dir: bool) -> bool:
    """Whether a rule ignores ``path``, an entry below the folder of each rule's .gitignore."""
    full = str(path)
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if full.startswith(rule.prefix) and rule.match(full[len(rule.prefix):].replace(os.sep, "/")):
            return True
    return False


def _read_gitignore(folder: Path) -> list[_IgnoreRule]:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    rules = []
    for line in text.splitlines():
        line = line.strip()
        # Negation ("!keep") is not supported; skipping it errs towards searching more.
        if not line or line.startswith(("#", "!")):
            continue
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        try:
            rules.append(_IgnoreRule(folder, compile_glob(line, anchored=anchored), dir_only))
        except ToolError:
            continue
    return rules


def not_too_big(path: Path) -> bool:
    try:
        return path.stat().st_size <= MAX_FILE_BYTES
    except OSError:
        return True


def is_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\x00" in f.read(_SNIFF)
    except OSError:
        return True


def searchable(file: Path) -> bool:
    """Whether grep looks inside a file named explicitly: a regular file, not over the size limit, not
    binary (rg would search it, so this is checked first)."""
    try:
        return file.is_file() and file.stat().st_size <= MAX_FILE_BYTES and not is_binary(file)
    except OSError:
        return False
