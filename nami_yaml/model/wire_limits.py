"""What the openai SDK reads whole before nami sees any of it, held to a size: the lines of one server-sent event
(its SSE decoder keeps them until the empty line that ends the event, so one endless ``data:`` line would grow
memory without end before StreamAssembly, which counts what the events say, has seen a byte of it), and the
body of an error response or a redirect (read whole, however long, to make the exception or to follow it).
And what it drops without a word: keep-alive comments, which hold a run as long as they keep coming.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from nami_yaml.model.assembly import Silent, TooLarge

# A line's end followed by another's start: an empty line, which ends an event (a line ends with \n, \r or
# \r\n; "\r\n" alone is one line's end).
_ENDS = (b"\n\n", b"\n\r", b"\r\r")
# An error's message is at the start of its body; the SDK shows only that.
ERROR_BODY_LIMIT = 64 * 1024
# JSON may spell one byte of text in six ("\u0001"), and an event carries its envelope besides.
_ESCAPED = 6
_ENVELOPE = 64 * 1024


def event_limit(max_response_bytes: int) -> int:
    """The most bytes one event may take on the wire when what it says must fit in ``max_response_bytes``."""
    return _ESCAPED * max_response_bytes + _ENVELOPE


def hold_events(response: Any, max_response_bytes: int | None) -> None:
    """Make ``response`` (an httpx response the SDK's stream has not begun to read) raise TooLarge once an
    event runs past :func:`event_limit` without ending."""
    if max_response_bytes is None:
        return
    read: Callable[..., Iterator[bytes]] = response.iter_bytes
    limit = event_limit(max_response_bytes)

    def iter_bytes(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        return bounded(read(*args, **kwargs), limit, max_response_bytes)

    response.iter_bytes = iter_bytes


def bounded(chunks: Iterator[bytes], limit: int, max_response_bytes: int) -> Iterator[bytes]:
    """``chunks`` as they come; TooLarge once more than ``limit`` bytes came since an event last ended."""
    pending = 0  # bytes since the last event's end
    last = b""  # the byte before this chunk, for an end split between two chunks
    for chunk in chunks:
        end = max(chunk.rfind(mark) for mark in _ENDS)
        if end >= 0:
            pending = len(chunk) - end - 2
        elif chunk and last + chunk[:1] in _ENDS:
            pending = len(chunk) - 1
        else:
            pending += len(chunk)
        if pending > limit:
            raise TooLarge(max_response_bytes)
        if chunk:
            last = chunk[-1:]
        yield chunk


def hold_silence(response: Any, seconds: float, said: Callable[[], object]) -> None:
    """Make ``response`` (as for hold_events) raise Silent once bytes kept coming for more than ``seconds``
    while ``said()`` stayed the same: a read times out after ``seconds`` of nothing at all, and a server that
    sends keep-alive comments (which the SDK drops) or empty events is held to the same time. The bytes are
    watched as they arrive, before any content decoding (httpx's iter_bytes reads them from iter_raw): gzip
    blocks that inflate to nothing keep a read from timing out as well, without ever reaching iter_bytes."""
    read: Callable[..., Iterator[bytes]] = response.iter_raw

    def iter_raw(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        return _watched(read(*args, **kwargs), seconds, said)

    response.iter_raw = iter_raw


def _watched(chunks: Iterator[bytes], seconds: float, said: Callable[[], object]) -> Iterator[bytes]:
    last, since = said(), time.monotonic()
    for chunk in chunks:
        now, now_said = time.monotonic(), said()
        if now_said != last:
            last, since = now_said, now
        elif now - since > seconds:
            raise Silent(seconds)
        yield chunk


def hold_error_body(response: Any) -> None:
    """A response event hook of the SDK's HTTP client (called before the body is read): the body of an error
    response or a redirect is read up to ERROR_BODY_LIMIT bytes, and the rest is left unread (its connection
    is closed, not reused)."""
    if response.status_code < 300:
        return
    read: Callable[..., Iterator[bytes]] = response.iter_bytes

    def iter_bytes(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        pieces = read(*args, **kwargs)
        left = ERROR_BODY_LIMIT
        try:
            for piece in pieces:
                if len(piece) > left:
                    yield piece[:left]
                    pieces.close()
                    response.stream.close()  # (not response.close(): the SDK reads the part kept as the body)
                    return
                left -= len(piece)
                yield piece
        finally:
            pieces.close()

    response.iter_bytes = iter_bytes
