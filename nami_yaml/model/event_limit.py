"""One server-sent event held to a size. The SDK's SSE decoder keeps an event's lines until the empty line that
ends it, so a server that never sends one (a single endless ``data:`` line) would grow memory without end
before StreamAssembly, which counts what the events say, has seen a byte of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from nami_yaml.model.assembly import TooLarge

# A line's end followed by another's start: an empty line, which ends an event (a line ends with \n, \r or
# \r\n; "\r\n" alone is one line's end).
_ENDS = (b"\n\n", b"\n\r", b"\r\r")
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
