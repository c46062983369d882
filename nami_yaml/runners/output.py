"""Head + tail capping of tool output, with spill files that keep the full text.

The model sees the first half of the budget and the last half, cut at line boundaries; whatever it does
not see is still on disk (when a spill directory is given), and the marker between head and tail says where.
A call's spill files stop at ``limits.max_saved_output`` (SaveBudget), ending with a note saying so; the
stream is still read past that, into the rolling tail only, so the end of a long log reaches the model.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path
from typing import AnyStr, BinaryIO

from nami_yaml.runners.spill import open_spill_dir
from nami_yaml.setting_defaults import LIMITS

# A rolling tail is trimmed only once it has grown this far past its cap, so trimming (a memmove of the
# kept bytes) happens rarely instead of on every chunk.
_TRIM_SLACK = 256 * 1024
# The most one call may write to saved-output files (limits.max_saved_output): without a cap one call
# filled 5.7 GB in 15 s.
MAX_SAVED_OUTPUT: int = LIMITS["max_saved_output"]


def omission_marker(omitted: int, spill_path: Path | None, unit: str = "bytes", *,
                    saved_only: int | None = None) -> str:
    """The line between head and tail, e.g. ``... [1,234 bytes omitted; full output: /x] ...``, or
    ``first N bytes saved: /x`` when the saved file stopped at its cap."""
    if spill_path is None:
        where = ""
    elif saved_only is not None:
        where = f"; first {saved_only:,} bytes saved: {spill_path}"
    else:
        where = f"; full output: {spill_path}"
    return f"\n... [{omitted:,} {unit} omitted{where}] ...\n"


# Room kept for the notes that end cut files (stdout's and stderr's), so that no file, and not all of a
# call's files together, pass the limit.
_NOTE_ROOM = 2 * 200


def cut_note(limit: int) -> bytes:
    """What a saved file ends with when it was cut at the limit: where, and that the process went on."""
    return (f"\n[nami stopped saving here, at limits.max_saved_output ({limit:,} bytes for one call); the rest "
            "is not saved, but its end is in the tool's result]\n").encode()


class SaveBudget:
    """The bytes one call's saved-output files may still take, shared by its stdout and stderr. A file cut
    at the budget ends with :func:`cut_note`, out of room the budget keeps for it: at most ``limit`` bytes
    are saved in all, notes included."""

    def __init__(self, limit: int = MAX_SAVED_OUTPUT):
        self.limit = max(0, int(limit))
        self.left = self.limit - _NOTE_ROOM if self.limit >= 2 * _NOTE_ROOM else self.limit // 2
        self.notes_left = self.limit - self.left
        self.exhausted = False

    def take(self, wanted: int) -> int:
        granted = min(wanted, self.left)
        self.left -= granted
        if granted < wanted:
            self.exhausted = True
        return granted

    def note(self) -> bytes:
        """The note that ends a cut file, or as much of it as the limit still allows."""
        note = cut_note(self.limit)[: self.notes_left]
        self.notes_left -= len(note)
        return note


def open_spill_file(spill_dir: Path, label: str) -> tuple[BinaryIO, Path]:
    """Create a new private file (0o600) in ``spill_dir`` and open it for writing.

    The folder is created (0o700) if missing, and must be the one nami made: a symlink or another folder
    put in its place raises OSError. The file is created inside the checked folder's descriptor.
    """
    folder = open_spill_dir(Path(spill_dir))
    try:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        for attempt in range(100):
            name = f"{stamp}-{label}-{secrets.token_hex(4)}.txt"
            try:
                fd = os.open(name, flags, 0o600, dir_fd=folder)
                break
            except FileExistsError:
                if attempt == 99:
                    raise
        return os.fdopen(fd, "wb"), Path(spill_dir) / name
    finally:
        os.close(folder)


def _complete_head(data: bytes) -> bytes:
    """Drop a UTF-8 sequence cut in half at the end, so the head does not end in a replacement char."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:  # continuation byte: keep looking for the lead byte
            continue
        needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
        return data[: end - back] if needed > back else data
    return data


def _complete_tail(data: bytes) -> bytes:
    """Skip continuation bytes at the start whose lead byte fell into the omitted middle."""
    start = 0
    while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def _whole_lines(head: AnyStr, tail: AnyStr) -> tuple[AnyStr, AnyStr, bool]:
    """Head and tail trimmed to whole lines, so no cut-off number reads like a real value. A trim that
    would cost more than half of either (one line longer than the budget) is not made: that line is cut
    inside, and the marker shows it. The flag says whether the tail now starts a line."""
    newline = b"\n" if isinstance(head, bytes) else "\n"
    end = head.rfind(newline) + 1  # type: ignore[arg-type]
    if end and 2 * end >= len(head):
        head = head[:end]
    start = tail.find(newline, 0, max(0, len(tail) - 1)) + 1  # type: ignore[arg-type]  # a final newline ends the last line
    if start and 2 * start <= len(tail):
        return head, tail[start:], True
    return head, tail, False


def _join(head: str, marker: str, tail: str, tail_starts_line: bool) -> str:
    """Head, marker and tail: the marker on a line of its own between whole lines, inside a cut line."""
    if not head and not tail:
        return marker
    before = "" if not head or head.endswith("\n") else " "
    after = "\n" if tail_starts_line or not tail else " "
    return head + before + marker.strip("\n") + after + tail


class OutputCapture:
    """Collects one output stream chunk by chunk with bounded memory.

    Keeps the first ``limit // 2`` bytes and a rolling last ``limit - limit // 2`` bytes. As soon as the
    stream exceeds ``limit``, everything (from byte 0) also goes to a spill file in ``spill_dir``, if given,
    until the budget is spent. Memory stays near ``limit + _TRIM_SLACK`` however much is fed.
    """

    def __init__(self, limit: int, spill_dir: Path | None = None, label: str = "output",
                 budget: SaveBudget | None = None):
        self.limit = max(0, int(limit))
        self.budget = budget if budget is not None else SaveBudget()
        self.saved = 0  # bytes in the spill file
        self.saved_cut = False  # the spill file stopped at the budget: it holds the first `saved` bytes
        self._head_cap = self.limit // 2
        self._tail_cap = self.limit - self._head_cap
        self._spill_dir = spill_dir
        self._label = label
        self._head = bytearray()
        self._tail = bytearray()
        self._spill: BinaryIO | None = None
        self.spill_path: Path | None = None
        self.total = 0
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total += len(chunk)
        if not self.truncated:
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if self.total > self.limit:
                self.truncated = True
                # Until now head + tail held every byte, so the spill file can start from byte 0.
                self._start_spill()
                self._trim_tail(force=True)
            return
        self._write_spill(chunk)
        if len(chunk) >= self._tail_cap:
            self._tail = bytearray(chunk[len(chunk) - self._tail_cap :])
        else:
            self._tail += chunk
            self._trim_tail(force=False)

    def _trim_tail(self, *, force: bool) -> None:
        excess = len(self._tail) - self._tail_cap
        if excess > 0 and (force or excess > _TRIM_SLACK):
            del self._tail[:excess]

    def _start_spill(self) -> None:
        if self._spill_dir is None or self.budget.limit == 0:  # max_saved_output: 0 saves nothing
            return
        try:
            self._spill, self.spill_path = open_spill_file(self._spill_dir, self._label)
        except OSError:
            self._spill, self.spill_path = None, None
            return
        self._write_spill(bytes(self._head))
        self._write_spill(bytes(self._tail))

    def _write_spill(self, data: bytes) -> None:
        if self._spill is None or self.saved_cut:
            return
        granted = self.budget.take(len(data))
        try:
            self._spill.write(data[:granted])
            self.saved += granted
            if granted < len(data):
                # From here on only the rolling tail is kept: the process goes on, its pipe is still read.
                self.saved_cut = True
                self._spill.write(self.budget.note())
                self._spill.close()
        except OSError:
            # A partial file would claim to be the full output; better to point at nothing.
            self._abandon_spill()

    def _abandon_spill(self) -> None:
        if self._spill is not None:
            with contextlib.suppress(OSError):
                self._spill.close()
        if self.spill_path is not None:
            with contextlib.suppress(OSError):
                self.spill_path.unlink()
        self._spill, self.spill_path = None, None

    def close(self) -> None:
        """Flush and close the spill file; idempotent. ``text()`` still works afterwards."""
        if self._spill is None:
            return
        try:
            self._spill.close()
        except OSError:
            self._abandon_spill()
        self._spill = None

    def text(self) -> str:
        """The capped text: everything when it fits, else head + marker + tail. Never raises on bad UTF-8."""
        if not self.truncated:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", errors="replace")
        head = _complete_head(bytes(self._head))
        tail = _complete_tail(bytes(self._tail[len(self._tail) - self._tail_cap :]))
        head, tail, tail_starts_line = _whole_lines(head, tail)
        omitted = self.total - len(head) - len(tail)
        marker = omission_marker(omitted, self.spill_path, saved_only=self.saved if self.saved_cut else None)
        return _join(head.decode("utf-8", errors="replace"), marker, tail.decode("utf-8", errors="replace"),
                     tail_starts_line)

    def __enter__(self) -> OutputCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def truncate_text(text: str, max_chars: int, spill_dir: Path | None,
                  max_saved: int = MAX_SAVED_OUTPUT) -> tuple[str, Path | None]:
    """Cap a string a Python tool returned: head + marker + tail, the full text spilled to a file (at
    most ``max_saved`` bytes of it).

    Counts characters, not bytes (the string is already decoded). Returns the text unchanged and no
    path when it fits.
    """
    max_chars = max(0, int(max_chars))
    if len(text) <= max_chars:
        return text, None
    path, saved_only = save_text(text, spill_dir, "result", max_saved)
    head_len = max_chars // 2
    head, tail, tail_starts_line = _whole_lines(text[:head_len], text[len(text) - (max_chars - head_len) :])
    omitted = len(text) - len(head) - len(tail)
    marker = omission_marker(omitted, path, unit="characters", saved_only=saved_only)
    return _join(head, marker, tail, tail_starts_line), path


def save_text(text: str, spill_dir: Path | None, label: str,
              max_saved: int = MAX_SAVED_OUTPUT) -> tuple[Path | None, int | None]:
    """Save ``text`` to a new saved-output file: its path (None when it could not be written) and, when
    the file stopped at ``max_saved`` bytes, that count. A partial write leaves no file behind."""
    if spill_dir is None or max_saved <= 0:
        return None, None
    path: Path | None = None
    saved_only: int | None = None
    try:
        handle, path = open_spill_file(spill_dir, label)
        with handle:
            # Python strings may hold lone surrogates; they must not make the spill fail.
            data = text.encode("utf-8", errors="replace")
            budget = SaveBudget(max_saved)
            granted = budget.take(len(data))
            handle.write(data[:granted])
            if granted < len(data):
                handle.write(budget.note())
                saved_only = granted
    except OSError:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        return None, None
    return path, saved_only


def cut_saved_text(text: str, max_chars: int, saved: Path) -> str:
    """``text`` (a whole output already saved at ``saved``) capped at ``max_chars`` as a call's output is:
    head + marker naming the saved file + tail; unchanged when it fits."""
    if len(text) <= max_chars:
        return text
    head_len = max(0, max_chars) // 2
    head, tail, tail_starts_line = _whole_lines(text[:head_len], text[len(text) - (max_chars - head_len):])
    return _join(head, omission_marker(len(text) - len(head) - len(tail), saved), tail, tail_starts_line)
