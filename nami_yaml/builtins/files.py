"""read_file, write_file, edit_file and list_dir, plus the atomic write every writing tool shares."""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from nami_yaml.builtins.edit_hint import not_found_message
from nami_yaml.builtins.workspace import (
    changed_error,
    display_path,
    open_folder,
    open_regular_file,
    resolve_path,
)
from nami_yaml.display import plural
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext

READ_MAX_LINES = 2000
READ_MAX_BYTES = 50_000
LINE_MAX_CHARS = 2000
LIST_MAX_ENTRIES = 500
EDIT_MAX_BYTES = 10_000_000
DIFF_MAX_LINES = 80
BINARY_SNIFF_BYTES = 8192
UTF8_BOM = b"\xef\xbb\xbf"
# Bytes pulled per readline(): bounds memory on a file with no newlines (a sparse hole, a minified blob).
_CHUNK = 64 * 1024
# atomic_write's temporary file: TEMP_PREFIX + 8 hex digits + TEMP_SUFFIX, next to the target.
TEMP_PREFIX = ".nami-"
TEMP_SUFFIX = ".tmp"


# ---------------------------------------------------------------- read_file

def read_file(path: str, offset: int = 1, limit: int = READ_MAX_LINES, *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path)
    shown = display_path(ctx, target)
    _require_regular_file(path, target)
    if offset < 1 or limit < 1:
        raise ToolError("offset and limit must be at least 1")
    limit = min(limit, READ_MAX_LINES)
    byte_budget = max(1000, min(READ_MAX_BYTES, ctx.settings.max_output) - 500)

    with os.fdopen(_open_checked(path, target, shown), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if b"\x00" in f.read(BINARY_SNIFF_BYTES):
            raise ToolError(f"{shown} looks like a binary file ({size:,} bytes, NUL bytes in its first "
                            "8 KB); read_file only shows text")
        f.seek(0)
        lines_out: list[str] = []
        used = 0
        lineno = 0
        next_offset: int | None = None
        note = ""
        while True:
            raw, cut, nul = _read_line(f)
            if raw is None:
                break
            lineno += 1
            if nul:
                note = (f"[Stopped at line {lineno}: binary data (NUL bytes) near byte {f.tell():,}; "
                        f"the file is {plural(size, 'byte')}.]")
                break
            if lineno < offset:
                continue
            if lineno == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM):]
            entry = f"{lineno:>6}\t{_decode_line(raw, cut=cut)}\n"
            cost = len(entry.encode("utf-8", "replace"))
            if lines_out and used + cost > byte_budget:
                next_offset = lineno
                note = _more_note(offset, lineno - 1, size, reason=f"the {byte_budget:,}-byte output cap")
                break
            lines_out.append(entry)
            used += cost
            if len(lines_out) >= limit and f.tell() < size:
                next_offset = lineno + 1
                note = _more_note(offset, lineno, size, reason=f"the {limit}-line limit")
                break

    if not lines_out and not note:
        if lineno == 0:
            return ToolResult(f"({shown} is empty)", details={"path": shown, "next_offset": None})
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {plural(lineno, 'line')}")
    content = "".join(lines_out)
    if note:
        content += note
    elif offset > 1:
        content += f"[End of file: line {lineno} is the last.]"
    return ToolResult(content.rstrip("\n"), details={"path": shown, "next_offset": next_offset})


def _read_line(f: BinaryIO) -> tuple[bytes | None, bool, bool]:
    """Read one line holding at most a few KB of it: (bytes without EOL or None at EOF, was cut, saw NUL).

    A line longer than the cap is skipped through in chunks so a file without newlines (a sparse hole,
    a minified blob) never loads whole; a NUL anywhere stops the scan early.
    """
    cap = LINE_MAX_CHARS * 4
    keep = f.readline(cap)
    if not keep:
        return None, False, False
    if keep.endswith(b"\n"):
        return keep[:-2] if keep.endswith(b"\r\n") else keep[:-1], False, b"\x00" in keep
    if len(keep) < cap:
        return keep, False, b"\x00" in keep  # last line, no newline at the end
    if b"\x00" in keep:
        return keep, True, True
    while True:
        more = f.readline(_CHUNK)
        if b"\x00" in more:
            return keep, True, True
        if not more or more.endswith(b"\n"):
            return keep, True, False


def _decode_line(raw: bytes, *, cut: bool) -> str:
    text = raw.decode("utf-8", errors="replace")
    if cut or len(text) > LINE_MAX_CHARS:
        return text[:LINE_MAX_CHARS] + f" ... [line cut at {LINE_MAX_CHARS} characters]"
    return text


def _more_note(offset: int, last: int, size: int, *, reason: str) -> str:
    return (f"[Showing lines {offset}-{last} ({reason}); the file is {size:,} bytes and has more. "
            f"Use offset={last + 1} to continue.]")


def _open_checked(path: str, target: Path, shown: str, doing: str = "read") -> int:
    """The checked file itself, opened without following links (see workspace.open_regular_file)."""
    try:
        return open_regular_file(target, shown=shown, doing=doing)
    except FileNotFoundError:
        raise ToolError(f"file not found: {path}") from None
    except PermissionError:
        raise ToolError(f"permission denied: {path}") from None


def _require_regular_file(path: str, target: Path) -> None:
    try:
        mode = target.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        hint = " ('~' is not expanded: paths are relative to the workspace root)" if path.startswith("~") else ""
        raise ToolError(f"file not found: {path}{hint}") from None
    if stat.S_ISDIR(mode):
        raise ToolError(f"{path} is a directory; use list_dir (or glob) to see what it holds")
    if not stat.S_ISREG(mode):
        # A FIFO or device would block or never end.
        raise ToolError(f"{path} is not a regular file")


# ---------------------------------------------------------------- write_file

def write_file(path: str, content: str, *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path, write=True)
    shown = display_path(ctx, target)
    data = content.encode("utf-8", errors="surrogateescape")
    existed = atomic_write(target, data, shown=shown)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "Overwrote" if existed else "Created"
    return ToolResult(f"{verb} {shown} ({plural(len(data), 'byte')}, {plural(lines, 'line')}).",
                      details={"path": shown, "bytes": len(data), "created": not existed})


def write_target(path: str, ctx: RuntimeContext) -> tuple[Path, str]:
    """The file write_file would write, and its name as shown; ToolError where it would refuse (checked
    again, without following links, when it writes)."""
    target = resolve_path(ctx, path, write=True)
    shown = display_path(ctx, target)
    if os.path.lexists(target):
        if not target.is_file():
            raise ToolError(f"{shown} exists and is not a regular file; refusing to replace it")
        if not os.access(target, os.W_OK):
            raise ToolError(f"{shown} is read-only (no write permission); refusing to replace it")
    return target, shown


def atomic_write(target: Path, data: bytes, *, shown: str | None = None) -> bool:
    """Replace ``target`` with ``data`` so that a crash at any moment leaves the old or the new file;
    returns whether a file was replaced (False: created).

    ``target`` is a path ``resolve_path`` returned. Its folder is reached without following links
    (workspace.open_folder, which creates missing folders), and everything happens inside that folder's
    descriptor: a temporary file written and fsynced there, renamed over the target (same folder, so
    atomic), the folder fsynced. A folder swapped for a link meanwhile is refused, never followed. An
    existing file keeps its mode (and owner, when allowed); one that is not a regular file, or without
    write permission, is refused (the rename needs only write permission on the folder, so it would
    otherwise replace a read-only file). ``shown`` names the file in errors.
    """
    shown = shown or str(target)
    try:
        folder = open_folder(target.parent, create=True, shown=shown, doing="written")
    except OSError as exc:
        raise ToolError(f"cannot create folder {target.parent}: {exc.strerror or exc}") from None
    try:
        return _replace_in(folder, target.name, data, shown)
    finally:
        os.close(folder)


def _replace_in(folder: int, name: str, data: bytes, shown: str) -> bool:
    try:
        old = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None:
        if stat.S_ISLNK(old.st_mode):  # resolve_path resolved links: this one was swapped in since
            raise changed_error(shown, "written")
        if not stat.S_ISREG(old.st_mode):
            raise ToolError(f"{shown} exists and is not a regular file; refusing to replace it")
        # os.access speaks for the real user: as root the permission bits do not stop writes, as with
        # any other program run as root.
        if not os.access(name, os.W_OK, dir_fd=folder, follow_symlinks=False):
            raise ToolError(f"{shown} is read-only (no write permission); refusing to replace it. Ask the user "
                            "to change its permissions if it should be changed")
    # A short fixed-length name, not derived from the target's: any name the file system allows for the
    # target (up to 255 bytes) must work, and ".<name>.<random>" would exceed that limit.
    tmp = f"{TEMP_PREFIX}{secrets.token_hex(4)}{TEMP_SUFFIX}"
    # 0o666 lets the umask shape a new file's mode exactly as an ordinary create would.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=folder)
    except OSError as exc:
        raise ToolError(f"cannot write in the folder of {shown}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
                with contextlib.suppress(OSError):
                    os.fchown(f.fileno(), old.st_uid, old.st_gid)
            view = memoryview(data)
            for start in range(0, len(view), 1 << 20):
                f.write(view[start:start + (1 << 20)])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):
        synced = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
        try:
            os.fsync(synced)
        finally:
            os.close(synced)
    return old is not None


# ---------------------------------------------------------------- edit_file

def edit_file(path: str, old_text: str, new_text: str, replace_all: bool = False, *,
              ctx: RuntimeContext) -> ToolResult:
    target, shown, raw = read_for_edit(path, ctx)
    edit = edited_text(raw, old_text, new_text, replace_all, shown)
    atomic_write(target, edit.encoded(), shown=shown)
    where = "line " + str(edit.line_numbers[0]) if edit.count == 1 else f"{edit.count} places"
    return ToolResult(f"Edited {shown}: replaced {where}.\n{_short_diff(edit.before, edit.after, shown)}",
                      details={"path": shown, "replacements": edit.count, "lines": edit.line_numbers})


def read_for_edit(path: str, ctx: RuntimeContext) -> tuple[Path, str, bytes]:
    """The file edit_file would change: its resolved path, its name as shown, and its bytes. Only reads;
    raises ToolError where edit_file would refuse (outside the workspace, missing, too large, read-only)."""
    target = resolve_path(ctx, path, write=True)
    shown = display_path(ctx, target)
    _require_regular_file(path, target)
    with os.fdopen(_open_checked(path, target, shown, doing="edited"), "rb") as f:
        info = os.fstat(f.fileno())
        if info.st_size > EDIT_MAX_BYTES:
            raise ToolError(f"{shown} is larger than {EDIT_MAX_BYTES:,} bytes; edit_file will not rewrite it")
        if not os.access(target, os.W_OK):  # checked again, in the folder, when writing
            raise ToolError(f"{shown} is read-only (no write permission); refusing to replace it. Ask the user "
                            "to change its permissions if it should be changed")
        return target, shown, f.read(EDIT_MAX_BYTES + 1)


@dataclass(frozen=True)
class EditedText:
    """What edit_file makes of a file, before anything is written (an approval prompt shows it as a diff).
    ``before`` and ``after`` have LF line ends when the whole file uses CRLF (``crlf``), which
    :meth:`encoded` puts back, with the byte-order mark when there was one."""

    before: str
    after: str
    count: int  # replacements made
    line_numbers: list[int]  # where (1-based, in ``before``)
    crlf: bool = False
    bom: bool = False

    def encoded(self) -> bytes:
        body = self.after.replace("\n", "\r\n") if self.crlf else self.after
        return (UTF8_BOM if self.bom else b"") + body.encode("utf-8", errors="surrogateescape")


def edited_text(raw: bytes, old_text: str, new_text: str, replace_all: bool, shown: str) -> EditedText:
    """The file's text with ``old_text`` replaced, as edit_file matches it (exactly, once unless
    ``replace_all``, with the file's line endings); raises ToolError with what to do instead."""
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{shown} looks like a binary file; edit_file only edits text")
    if not old_text:
        raise ToolError("old_text is empty; to create or replace a whole file use write_file")
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; nothing to change")

    bom = raw.startswith(UTF8_BOM)
    # surrogateescape round-trips bytes that are not UTF-8, so the rest of the file is written back as is.
    text = raw[len(UTF8_BOM) if bom else 0:].decode("utf-8", errors="surrogateescape")
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    old, new = old_text, new_text
    if crlf:
        text, old, new = (s.replace("\r\n", "\n") for s in (text, old, new))
    elif "\r\n" in text and old not in text:
        # Mixed line endings: the model sends LF, so try the CRLF spelling before giving up.
        old_crlf = old.replace("\r\n", "\n").replace("\n", "\r\n")
        if old_crlf in text:
            old, new = old_crlf, new.replace("\r\n", "\n").replace("\n", "\r\n")

    starts = _find_all(text, old)
    if not starts:
        raise ToolError(not_found_message(text, old, shown))
    line_numbers = [text.count("\n", 0, i) + 1 for i in starts]
    if len(starts) > 1 and not replace_all:
        listed = ", ".join(str(n) for n in line_numbers[:20]) + (", ..." if len(starts) > 20 else "")
        raise ToolError(f"old_text matches {len(starts)} times in {shown} (at lines {listed}); include more "
                        "surrounding lines to make it unique, or set replace_all=true to change all of them")

    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    count = len(starts) if replace_all else 1
    return EditedText(text, updated, count, line_numbers[:count], crlf=crlf, bom=bom)


def _find_all(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + len(needle))
    return found


def _short_diff(before: str, after: str, shown: str) -> str:
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{shown}", f"b/{shown}",
                                     n=2, lineterm=""))
    cut = [line if len(line) <= 300 else line[:300] + " ..." for line in diff[:DIFF_MAX_LINES]]
    if len(diff) > DIFF_MAX_LINES:
        cut.append(f"... [{len(diff) - DIFF_MAX_LINES} more diff lines]")
    return "\n".join(cut)


# ---------------------------------------------------------------- list_dir

def list_dir(path: str = ".", *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path)
    shown = display_path(ctx, target)
    if not target.exists():
        raise ToolError(f"folder not found: {path}")
    if not target.is_dir():
        raise ToolError(f"{path} is a file, not a folder; use read_file to read it")
    try:
        entries = sorted(os.scandir(target), key=lambda e: e.name)
    except PermissionError:
        raise ToolError(f"permission denied listing {path}") from None

    lines: list[str] = []
    for entry in entries[:LIST_MAX_ENTRIES]:
        if entry.is_symlink():
            target_text = os.readlink(entry.path)
            mark = "/" if entry.is_dir() else ""
            lines.append(f"{entry.name}{mark} -> {target_text}")
        elif entry.is_dir():
            lines.append(entry.name + "/")
        else:
            lines.append(entry.name)
    left = entries[LIST_MAX_ENTRIES:]
    if not entries:
        lines.append(f"({shown} is empty)")
    elif left:
        dirs = sum(1 for e in left if e.is_dir())
        lines.append(f"[{plural(len(left), 'more entry', 'more entries')} not shown ({plural(dirs, 'folder')}, {len(left) - dirs} other); "
                     "use glob to narrow down]")
    return ToolResult("\n".join(lines), details={"path": shown, "entries": len(entries),
                                                 "omitted": len(left)})
