"""Head + tail capping of tool output, with spill files that keep the full text.

The model sees the first half of the budget and the last half, cut at line boundaries; whatever it does
not see is still on disk (when a spill directory is given), and the marker between head and tail says where.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import AnyStr, BinaryIO

# A rolling tail is trimmed only once it has grown this far past its cap, so trimming (a memmove of the
# kept bytes) happens rarely instead of on every chunk.
_TRIM_SLACK = 256 * 1024


def omission_marker(omitted: int, spill_path: Path | None, unit: str = "bytes") -> str:
    """The line between head and tail, e.g. ``... [1,234 bytes omitted; full output: /x] ...``."""
    where = f"; full output: {spill_path}" if spill_path is not None else ""
    return f"\n... [{omitted:,} {unit} omitted{where}] ...\n"


def open_spill_file(spill_dir: Path, label: str) -> tuple[BinaryIO, Path]:
    """Create a new private file in ``spill_dir`` (made 0o700 if we create it) and open it for writing."""
    spill_dir = Path(spill_dir)
    if not spill_dir.is_dir():
        spill_dir.mkdir(parents=True, exist_ok=True)
        # mkdir's mode is filtered by the umask and ignored for parents; spill files can hold secrets
        # a command printed, so the directory we own is made private explicitly.
        os.chmod(spill_dir, 0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # mkstemp gives a unique name and a 0o600 file without any race against other sessions.
    fd, name = tempfile.mkstemp(prefix=f"{stamp}-{label}-", suffix=".txt", dir=spill_dir)
    return os.fdopen(fd, "wb"), Path(name)


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
    stream exceeds ``limit``, everything (from byte 0) also goes to a spill file in ``spill_dir``, if given.
    Memory stays near ``limit + _TRIM_SLACK`` however much is fed.
    """

    def __init__(self, limit: int, spill_dir: Path | None = None, label: str = "output"):
        self.limit = max(0, int(limit))
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
        if self._spill_dir is None:
            return
        try:
            self._spill, self.spill_path = open_spill_file(self._spill_dir, self._label)
        except OSError:
            self._spill, self.spill_path = None, None
            return
        self._write_spill(bytes(self._head))
        self._write_spill(bytes(self._tail))

    def _write_spill(self, data: bytes) -> None:
        if self._spill is None:
            return
        try:
            self._spill.write(data)
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
        return _join(head.decode("utf-8", errors="replace"), omission_marker(omitted, self.spill_path),
                     tail.decode("utf-8", errors="replace"), tail_starts_line)

    def __enter__(self) -> OutputCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def truncate_text(text: str, max_chars: int, spill_dir: Path | None) -> tuple[str, Path | None]:
    """Cap a string a Python tool returned: head + marker + tail, the full text spilled to a file.

    Counts characters, not bytes (the string is already decoded). Returns the text unchanged and no
    path when it fits.
    """
    max_chars = max(0, int(max_chars))
    if len(text) <= max_chars:
        return text, None
    path: Path | None = None
    if spill_dir is not None:
        try:
            handle, path = open_spill_file(spill_dir, "result")
            with handle:
                # Python strings may hold lone surrogates; they must not make the spill fail.
                handle.write(text.encode("utf-8", errors="replace"))
        except OSError:
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()
            path = None
    head_len = max_chars // 2
    head, tail, tail_starts_line = _whole_lines(text[:head_len], text[len(text) - (max_chars - head_len) :])
    omitted = len(text) - len(head) - len(tail)
    return _join(head, omission_marker(omitted, path, unit="characters"), tail, tail_starts_line), path
