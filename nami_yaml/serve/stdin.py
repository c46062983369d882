"""The client's messages on ``nami mcp serve``'s stdin, read so that stopping never waits for the client.

The SDK's ``stdio_server`` reads stdin in an anyio worker thread that a cancellation waits for: on SIGTERM
or Ctrl-C with the client's end of stdin still open, nami hung in that read for as long as the client
kept quiet. Here a daemon thread of our own reads a private duplicate of the descriptor with ``os.read``
(no buffered object whose lock could stall the interpreter's exit) and hands whole lines to the event
loop; the loop can stop at any moment and the thread is simply left behind.

A line is at most MAX_MESSAGE bytes, as for the servers nami talks to: a client sending one without end
had nami buffer it all (and rescan it for every chunk). Each byte is scanned once; past the limit the
session ends, the reason kept in :attr:`StdinLines.problem`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import threading

from nami_yaml.mcp.stdio import MAX_MESSAGE

QUEUED_LINES = 16  # lines read ahead of the server; then the reader waits (the client's writes block)


class StdinLines:
    """Async iteration over the lines of ``fd`` (a str per line, newline kept), for ``stdio_server(stdin=…)``.

    Taking it points ``fd`` itself at /dev/null, as the SDK does for stdin it reads: a tool running inside
    nami (an entry point) that reads stdin gets EOF instead of the protocol's bytes."""

    def __init__(self, fd: int = 0, *, max_line: int = MAX_MESSAGE):
        self._queue: asyncio.Queue[str | None] | None = None
        self.max_line = max_line
        self.problem: str | None = None  # why the session was ended early (a line past max_line)
        try:
            self._fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        except OSError:  # stdin closed: reading it ends the session at once
            self._fd = fd
            return
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, fd)
            os.close(null)

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self._queue is None:
            self._queue = asyncio.Queue(QUEUED_LINES)
            threading.Thread(target=self._read, args=(asyncio.get_running_loop(), self._queue),
                             name="nami-mcp-stdin", daemon=True).start()
        line = await self._queue.get()
        if line is None:
            raise StopAsyncIteration
        return line

    def _read(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str | None]) -> None:
        def put(item: str | None) -> None:
            asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

        pending = bytearray()
        try:
            while chunk := _read_or_end(self._fd):
                scanned = len(pending)  # what came before holds no newline: only the new bytes are searched
                pending += chunk
                begin = 0
                while (end := pending.find(b"\n", max(begin, scanned))) >= 0:
                    if end + 1 - begin > self.max_line:
                        break
                    put(pending[begin:end + 1].decode("utf-8", "replace"))
                    begin = end + 1
                del pending[:begin]
                if len(pending) > self.max_line:
                    self.problem = f"the client sent a message longer than {self.max_line:,} bytes; the session ends"
                    put(None)
                    return
            if pending:
                put(pending.decode("utf-8", "replace"))
            put(None)
        except Exception:  # the loop is gone: nami is stopping, nothing left to hand over
            return


def _read_or_end(fd: int) -> bytes:
    """The next bytes of ``fd``; none (the end) when it cannot be read (closed, not open for reading)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""
