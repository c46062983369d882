"""The project folder as data, for machines that do not share this one's files: packed once here (what
git ignores, and virtualenvs and caches, left out), unpacked once per machine into a folder named by
its digest, which the jobs' relative paths are then resolved against.

The folders are in a folder of the user's own (0700) in the machine's temporary folder, never in /tmp
itself: another user of a node could otherwise make the folder a digest names first (its name is in plain
sight while a project unpacks) and have the jobs run their agent.yaml and tools. A folder found where one
is reused is used only if it is still the user's own and nobody else may write it."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from nami_yaml.errors import ConfigError

MAX_PACKAGE_BYTES = 512 * 1024 * 1024
PREFIX = "nami-batch-project-"
KEEP_UNPACKED = 86_400.0  # seconds an unpacked project stays on a machine after its last use
# Never worth shipping, whatever .gitignore says.
SKIPPED_FOLDERS = frozenset({".git", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache", ".pytest_cache",
                             ".ruff_cache", ".tox"})


def project_files(root: Path) -> list[Path]:
    """The files to ship, relative to ``root``: git's view (tracked and untracked, not ignored) when
    ``root`` is in a git work tree, else every file; skipped folders left out either way."""
    listed = _git_files(root)
    if listed is None:
        listed = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
            listed.extend(Path(folder, f).relative_to(root) for f in sorted(files))
    return [p for p in listed if not SKIPPED_FOLDERS.intersection(p.parts)]


def _git_files(root: Path) -> list[Path] | None:
    from nami_yaml.env_secrets import child_environment
    from nami_yaml.runners.process import ProcessRequest, run_process

    request = ProcessRequest(argv=["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=root, env=child_environment(os.environ), timeout=60, max_output=200_000_000,
                             sandbox=None)  # nami's own git, fixed arguments, before anything of the project runs
    result = run_process(request)
    if not result.ok or result.truncated:
        return None  # not a git work tree (or no git): every file
    return [Path(name) for name in result.stdout.split("\0") if name and (root / name).is_file()]


def pack(root: Path) -> tuple[bytes, str]:
    """A gzipped tar of the project folder and its sha256 (ConfigError when it is too large to ship)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for relative in project_files(root):
            archive.add(root / relative, arcname=str(relative), recursive=False)
            if buffer.tell() > MAX_PACKAGE_BYTES:
                raise ConfigError(f"{root} is more than {MAX_PACKAGE_BYTES // 2**20} MiB packed: too large to "
                                  "ship to the Ray nodes. Leave large files out with .gitignore, or pass "
                                  "--ray-shared where every node sees the same paths")
    data = buffer.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def unpack(data: bytes, digest: str, base: Path | None = None) -> Path:
    """The project folder on this machine: unpacked once per digest (other tasks reuse it), in ``base``
    (default: the user's own folder in the temporary folder, :func:`private_base`)."""
    base = base or private_base()
    target = base / f"{PREFIX}{digest[:20]}"
    if _ours(target):
        with contextlib.suppress(OSError):
            os.utime(target)  # in use: not one of the old ones
        return target
    _remove_old(base)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=base))
    kept = False
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(staging, filter="data")
            else:  # Python < 3.10.12: no filters; the archive is our own
                archive.extractall(staging)  # noqa: S202
        if os.path.lexists(target) and not _ours(target):
            kept = True  # something else has the name (in a base not ours alone): this copy keeps its own
            return staging
        os.rename(staging, target)
    except OSError:
        if not _ours(target):  # not another task of this batch having unpacked it first
            raise
    finally:
        if not kept:
            with contextlib.suppress(OSError):
                shutil.rmtree(staging)
    return target


def _ours(folder: Path) -> bool:
    """A real folder (not a link) of this user that no one else may write."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


_PRIVATE: dict[str, Path] = {}


def private_base() -> Path:
    """The user's own folder (0700) for unpacked projects in the temporary folder, made if missing; where
    that name is taken by anything else, a new private folder for this process."""
    shared = tempfile.gettempdir()
    if shared not in _PRIVATE:
        folder = Path(shared) / f"nami-batch-projects-{os.getuid()}"
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700)
        try:
            info = os.lstat(folder)
            usable = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077
        except OSError:
            usable = False
        _PRIVATE[shared] = folder if usable else Path(tempfile.mkdtemp(prefix="nami-batch-projects-"))
    return _PRIVATE[shared]


def _remove_old(base: Path) -> None:
    cutoff = time.time() - KEEP_UNPACKED
    for old in base.glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and not old.is_symlink() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)


def run_on_node(package: bytes | None, digest: str | None, job_data: dict[str, Any]) -> dict[str, Any]:
    """The Ray task: unpack the project (if shipped), then run the job against it in a worker process."""
    from nami_yaml.batch.isolate import run_isolated

    root = unpack(package, digest) if package is not None and digest else None
    return run_isolated(job_data, root=root)

