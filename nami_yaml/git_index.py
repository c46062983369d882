"""What a repository's index lists, read by git itself: cheaper than a walk of a large work tree (git reads one
file, its index, however many folders the tree has).

Git is run with nothing of the repository's or the person's configuration that runs a program: no
fsmonitor, no hooks, no pager, no system or global config file (``HOME`` is nowhere), so listing a cloned
repository's index runs none of its code. Where git is missing, the folder is in no repository, or git
refuses (a repository owned by someone else), the answer is None and the caller walks instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

LIST_TIMEOUT = 10.0


def git_ls_files(*arguments: str, work_tree: Path, git_dir: Path | None = None) -> bytes | None:
    """``git ls-files ARGUMENTS`` in ``work_tree`` (of ``git_dir``, or the repository git finds from there):
    its raw standard output, or None where git could not say."""
    if shutil.which("git") is None:
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "HOME": os.devnull, "LC_ALL": "C"}
    where = [f"--git-dir={git_dir}", f"--work-tree={work_tree}"] if git_dir is not None else ["-C", str(work_tree)]
    argv = ["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}", *where,
            "ls-files", *arguments]
    try:
        listed = subprocess.run(argv, capture_output=True, env=env, timeout=LIST_TIMEOUT, check=False,
                                stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return listed.stdout if listed.returncode == 0 else None


def in_repository(folder: Path) -> bool:
    """Whether ``folder`` or a folder above it has a ``.git`` (a folder, or the file of a worktree or a
    submodule): a cheap look before a git process is started for nothing."""
    return any((above / ".git").exists() for above in (folder, *folder.parents))


def tracked_named(folder: Path, name: str) -> list[Path] | None:
    """Every file called ``name`` git's index lists at or below ``folder`` (whether or not it is still in the
    work tree), or None where git cannot say (no repository, no git)."""
    if not in_repository(folder):
        return None
    listed = git_ls_files("-z", "--cached", "--", name, f"*/{name}", work_tree=folder)
    if listed is None:
        return None
    return [folder / os.fsdecode(path) for path in listed.split(b"\0") if path]
