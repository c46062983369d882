"""Tool files found valid, kept between commands: a project of a thousand tool files is otherwise parsed and
checked whole by every `nami check`, `nami run` and `nami tools list` (0.5-1 s of CPU).

An entry says one thing: "these bytes, checked by this nami, were a valid tool file, and this is what they
say". It is keyed by the SHA-256 of the file's bytes and holds the file's parsed value and where each of its
tools and their names are written (for ``file:line:col`` in messages). The entries of the files of one
folder are kept together, one pack, so a folder of a thousand tool files is one file to read; the packs are
in a folder named by nami's code (its version, the tool schema and the stat of its source files, so an
edited checkout never reads a verdict of other code). Nothing else is taken from it:

- only a file with no problem at all (no error, no warning) is written, so `nami check` still reports every
  problem of a file, positioned, from a parse; a cached file's checks of the machine (programs on PATH,
  ``cwd:`` folders, the sandbox) and of the files beside it (``docs:``) are made again each time, and any
  problem they find sends the file through the whole parse and checks;
- what trust fingerprints is still the bytes read, never the cache; the digest is of those same bytes;
- a pack that does not parse, has the wrong shape, names another folder or code, or is not the user's own
  file in the user's own folder (0600 files in 0700 folders) is ignored, and so is an entry of the wrong
  shape: a cache is never an error, and a write that fails loses nothing but time. Packs are written whole
  (a temporary file renamed).

The folder is nami's cache folder (``$XDG_CACHE_HOME/nami``), which the sandbox hides from tools and whose
writes need approval like those of the trust store's folder (app/protected.py): what could write an entry
could as well write the trust store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from nami_yaml.version import __version__
from nami_yaml.xdg import user_cache_dir

FORMAT = 1  # the shape of a pack; a new shape is a new folder
MAX_PACK_BYTES = 64_000_000  # larger: not read (a thousand tool files make some 1 MB)
KEPT_PACKS = 256  # packs kept in memory by one process (a test run opens thousands of projects)
Place = tuple[int, int, int, int]  # a tool's line and column, and those of its ``name``


@dataclass(frozen=True)
class Validated:
    """What the cache knows of one file's bytes: the parsed value, and per tool (in the file's order) where it
    and its name are written."""

    value: Any
    places: tuple[Place, ...]


@dataclass
class _Pack:
    """The entries of the tool files of one folder, by digest: one file to read for a folder of a thousand."""

    path: Path
    folder: str
    entries: dict[str, Any]
    used: set[str] = field(default_factory=set)  # looked up or added by this process
    added: dict[str, Any] = field(default_factory=dict)  # to write


def lookup(file: Path, digest: str) -> Validated | None:
    """The entry for the tool file ``file`` whose bytes have ``digest``, or None (none, unreadable, not ours,
    malformed)."""
    pack = _pack(file)
    if pack is None:
        return None
    pack.used.add(digest)
    return _entry(pack.added.get(digest) or pack.entries.get(digest))


def remember(file: Path, digest: str, value: Any, places: list[Place]) -> None:
    """Keep (at the next :func:`save`) that ``file``'s bytes, with ``digest``, are a valid tool file with
    ``value``; a value JSON would not give back as it is (a date, bytes) is not kept."""
    pack = _pack(file, create=True)
    if pack is not None and _plain(value):
        pack.used.add(digest)
        pack.added[digest] = {"value": value, "places": [list(place) for place in places]}


def save() -> None:
    """Write the packs :func:`remember` added to: each whole, with the entries it had (but those this process
    did not look up, once they outnumber those it did: files since changed or gone)."""
    for pack in _PACKS.values():
        if not pack.added:
            continue
        entries = {**pack.entries, **pack.added}
        if len(entries) > 2 * len(pack.used) + 64:
            entries = {digest: entry for digest, entry in entries.items() if digest in pack.used}
        try:
            text = json.dumps({"format": FORMAT, "code": _code(), "folder": pack.folder, "entries": entries},
                              ensure_ascii=True, separators=(",", ":"))
        except (TypeError, ValueError):
            text = None
        if text is not None:
            _write(pack.path, text)
        pack.entries, pack.added = entries, {}


def _entry(entry: Any) -> Validated | None:
    """An entry's contents if it has the shape :func:`remember` gives it."""
    if not (isinstance(entry, dict) and "value" in entry and isinstance(entry.get("places"), list)):
        return None
    places = entry["places"]
    if not all(isinstance(place, list) and len(place) == 4 and all(type(n) is int for n in place) for place in places):
        return None
    return Validated(entry["value"], tuple(tuple(place) for place in places))  # type: ignore[misc]


def _pack(file: Path, create: bool = False) -> _Pack | None:
    """The pack of ``file``'s folder, read once per process; None where the cache folder is missing (and not
    ``create``) or not safely the user's own."""
    folder = _folder(create)
    if folder is None:
        return None
    where = os.path.dirname(os.path.abspath(file))
    key = (folder, where)
    if key not in _PACKS:
        if len(_PACKS) >= KEPT_PACKS:
            save()
            _PACKS.clear()
        path = folder / f"{hashlib.sha256(where.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}.json"
        _PACKS[key] = _Pack(path, where, _read(path, where))
    return _PACKS[key]


def _read(path: Path, where: str) -> dict[str, Any]:
    """The entries of the pack at ``path`` (of the folder ``where``), or none."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        info = os.fstat(descriptor)
        if not _own(info, stat.S_ISREG) or info.st_size > MAX_PACK_BYTES:
            return {}
        pack = json.loads(_read_all(descriptor, info.st_size))
    except (OSError, ValueError, RecursionError):
        return {}
    finally:
        os.close(descriptor)
    if not (isinstance(pack, dict) and pack.get("format") == FORMAT and pack.get("code") == _code()
            and pack.get("folder") == where and isinstance(pack.get("entries"), dict)):
        return {}
    return pack["entries"]


def _read_all(descriptor: int, size: int) -> bytes:
    chunks = []
    while chunk := os.read(descriptor, max(size + 1, 65536)):
        chunks.append(chunk)
    return b"".join(chunks)


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of JSON's own types only (dict keys strings), so it loads back equal and of
    the same types. YAML also gives dates and bytes, which JSON would turn into something else."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    return kind in (str, int, float, bool, type(None))


def _own(info: os.stat_result, kind: Any) -> bool:
    """The user's own file or folder (of that kind), which nobody else may read or write."""
    return kind(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def _folder(create: bool = False) -> Path | None:
    """This code's folder of entries (made when ``create``), or None where it is missing or not safely ours."""
    where = (os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))  # what user_cache_dir() reads
    if where not in _FOLDERS:
        _FOLDERS[where] = user_cache_dir() / "tools" / _code()
    folder = _FOLDERS[where]
    base = folder.parent
    if folder not in _CHECKED or (create and not _CHECKED[folder]):
        if create:
            with contextlib.suppress(OSError):
                base.parent.parent.mkdir(parents=True, exist_ok=True)  # the user's cache folder ($XDG_CACHE_HOME)
            for level in (base.parent, base, folder):  # each made 0700 (parents=True would not make them so)
                with contextlib.suppress(OSError):
                    level.mkdir(mode=0o700, exist_ok=True)
        _CHECKED[folder] = _safe(base) and _safe(folder)
    return folder if _CHECKED[folder] else None


def _safe(folder: Path) -> bool:
    try:
        return _own(os.lstat(folder), stat.S_ISDIR)
    except OSError:
        return False


def _write(path: Path, text: str) -> None:
    """``text`` as ``path``, whole or not at all: a temporary file (0600) renamed over it. A write that fails
    leaves the pack as it was."""
    data = text.encode("ascii")
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".pack-", suffix=".tmp")
    except OSError:
        return
    written = 0
    try:
        while written < len(data):
            written += os.write(descriptor, data[written:])
        closing, descriptor = descriptor, -1
        os.close(closing)
        os.replace(temporary, path)
    except OSError:
        if descriptor >= 0:
            os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temporary)


@cache
def _code() -> str:
    """This nami's code, as far as checking a tool file goes: its version, the tool schema, and the size and
    time of each of its source files (a checkout being edited is new code at each edit)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0".encode())
    digest.update((package / "spec" / "schemas" / "tool.schema.json").read_bytes())
    for root, folders, files in os.walk(package):
        folders[:] = sorted(folder for folder in folders if folder != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                info = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]


# Per process: the packs read (the listing trust covers and the loader ask for the same files), and which
# folders were found safe.
_PACKS: dict[tuple[Path, str], _Pack] = {}
_CHECKED: dict[Path, bool] = {}
_FOLDERS: dict[tuple[str | None, str | None], Path] = {}


def forget() -> None:
    """Drop what this process looked up (for a process that changes $XDG_CACHE_HOME, as tests do)."""
    _PACKS.clear()
    _CHECKED.clear()
    _FOLDERS.clear()


__all__ = ["Validated", "forget", "lookup", "remember", "save"]
