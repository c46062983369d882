"""What a repository's index lists, read by git itself: cheaper than a walk of a large work tree (git reads one
file, its index, however many folders the tree has).

Git is a program run on a repository nami may have just cloned, so it runs as every program nami starts:
through the runners' one subprocess path (runners/git_run.py), in the sandbox where bubblewrap works (the
folder read-only, the repository's git folders shown read-only where the sandbox would hide them, no network,
the home folder and credentials hidden), with a scrubbed environment, bounded output and a deadline. And
with nothing of the repository's or the person's configuration that runs a program: no fsmonitor, no hooks,
no pager, no system or global config file (``HOME`` is nowhere), a bare repository only where it is named;
so listing a cloned repository's index runs none of its code. Where git is missing, the folder is in no
repository, or git refuses (a repository owned by someone else, one the sandbox hides), the answer is None
and the caller walks instead.

A leaf: config/ reads the project's AGENTS.md files through it, and config/ may not import runners/. It holds
what is the same whoever starts git (the command line and its switches, the folders git must see, reading its
answer); the runner is given to it once, by the package itself (nami_yaml/__init__.py, which runs before any
module of nami_yaml is imported), so no caller can reach git another way. Without a runner nothing is run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

LIST_TIMEOUT = 10.0
# The most of git's answer read: a listing of the whole index (the gitlinks') is some 100 bytes a file. A
# listing cut there is no listing: the caller walks, or watches no submodule it cannot name.
MAX_LISTING_BYTES = 64 * 1024 * 1024
# Given to git on its command line, which neither the repository's config nor an included file overrides.
SWITCHES = ("--no-pager", "-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}",
            # Paths in ASCII, C-quoted (a name that is not UTF-8 comes back byte for byte: see unquoted)
            "-c", "core.quotePath=true")
# Variables beside the scrubbed environment: no system or global configuration, no home to find one in.
ENVIRONMENT = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull, "LC_ALL": "C"}


@dataclass(frozen=True)
class GitCommand:
    """One git command: its argv, the folder it runs in (read-only to it), the variables it gets beside a
    scrubbed environment, and the repository's git folders it reads (shown where the sandbox hides them:
    a linked worktree's repository in the home folder)."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    git_folders: tuple[Path, ...] = ()


GitRunner = Callable[[GitCommand], str | None]
"""Runs a GitCommand to its end: its standard output, or None where it failed, timed out or said too much."""

_runner: GitRunner | None = None


def run_git_with(runner: GitRunner) -> None:
    """The one runner of every git command of this module (the package gives the runners' one)."""
    global _runner
    _runner = runner


def git_ls_files(*arguments: str, work_tree: Path, git_dir: Path | None = None) -> str | None:
    """``git ls-files ARGUMENTS`` in ``work_tree`` (of ``git_dir``, or the repository git finds from there):
    its standard output (paths C-quoted where not plain ASCII), or None where git could not say."""
    if _runner is None:
        return None
    work_tree = Path(os.path.abspath(work_tree))
    if git_dir is not None:
        where: tuple[str, ...] = (f"--git-dir={git_dir}", f"--work-tree={work_tree}")
        folders = git_folders(git_dir)
    else:
        entry = repository_entry(work_tree)
        where, folders = (), git_folders(entry) if entry is not None else []
    command = GitCommand(("git", *SWITCHES, *where, "ls-files", *arguments), work_tree, ENVIRONMENT,
                         tuple(folders))
    return _runner(command)


def repository_entry(folder: Path) -> Path | None:
    """The ``.git`` git finds from ``folder`` (a folder, or the file of a worktree or a submodule): in it,
    or in the nearest folder above it."""
    for above in (folder, *folder.parents):
        if os.path.lexists(above / ".git"):
            return above / ".git"
    return None


def in_repository(folder: Path) -> bool:
    """Whether ``folder`` or a folder above it has a ``.git``: a cheap look before a git process is started
    for nothing."""
    return repository_entry(folder) is not None


def pointed(gitfile: Path) -> Path | None:
    """Where a ``.git`` file (``gitdir: PATH``) or a ``commondir`` points, if it can be read."""
    try:
        text = gitfile.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return None
    text = text.removeprefix("gitdir:").strip()
    if not text:
        return None
    target = Path(text)
    return (target if target.is_absolute() else gitfile.parent / target).resolve()


def git_folders(entry: Path) -> list[Path]:
    """The folders git reads of the repository behind ``entry`` (a ``.git`` folder, file or link): the git
    folder itself and, for a linked worktree, the main repository's that its ``commondir`` names."""
    gitdir = entry.resolve() if entry.is_symlink() or entry.is_dir() else pointed(entry)
    if gitdir is None:
        return []
    folders = [gitdir]
    common = gitdir / "commondir"
    if common.is_file() and (shared := pointed(common)) is not None and shared != gitdir:
        folders.append(shared)
    return folders


_OCTAL = re.compile(r"[0-7]{3}")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquoted(path: str) -> str:
    """A path as git prints it (C-quoted between double quotes where it is not plain ASCII: ``\\t``,
    ``\\303\\251``), as the file system names it (bytes that are not UTF-8 kept, as os.fsdecode keeps them)."""
    if not (path.startswith('"') and path.endswith('"') and len(path) >= 2):
        return path
    raw = bytearray()
    text = path[1:-1]
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            raw += char.encode("utf-8", "surrogateescape")
            index += 1
        elif text[index + 1] in _ESCAPES:
            raw.append(_ESCAPES[text[index + 1]])
            index += 2
        elif _OCTAL.fullmatch(text[index + 1:index + 4]):
            raw.append(int(text[index + 1:index + 4], 8) & 0xFF)
            index += 4
        else:  # not git's: the backslash as it is
            raw.append(92)
            index += 1
    return os.fsdecode(bytes(raw))


def tracked_named(folder: Path, name: str) -> list[Path] | None:
    """Every file called ``name`` git's index lists at or below ``folder`` (whether or not it is still in the
    work tree), or None where git cannot say (no repository, no git)."""
    if not in_repository(folder):
        return None
    listed = git_ls_files("--cached", "--", name, f"*/{name}", work_tree=folder)
    if listed is None:
        return None
    return [folder / unquoted(path) for path in listed.split("\n") if path]


def submodule_paths(git: Path) -> list[str]:
    """The paths of the submodules (gitlinks) the index of the repository in ``git`` (a ``.git`` folder)
    names; [] where git cannot say."""
    listed = git_ls_files("--stage", work_tree=git.parent, git_dir=git) if git.is_dir() else None
    if listed is None:
        return []
    paths = []
    for record in listed.split("\n"):
        head, _, path = record.partition("\t")
        if head.startswith("160000 ") and path:
            paths.append(unquoted(path))
    return paths
