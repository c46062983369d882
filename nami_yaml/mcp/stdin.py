"""The client's messages on ``nami mcp serve``'s stdin, read so that stopping never waits for the client.

The SDK's ``stdio_server`` reads stdin in an anyio worker thread that a cancellation waits for: on SIGTERM
or Ctrl-C with the client's end of stdin still open, nami hung in that read for as long as the client
kept quiet. Here a daemon thread of our own reads a private duplicate of the descriptor with ``os.read``
(no buffered object whose lock could stall the interpreter's exit) and hands whole lines to the event
loop; the loop can stop at any moment and the thread is simply left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import threading

QUEUED_LINES = 16  # lines read ahead of the server; then the reader waits (the client's writes block)


class StdinLines:
    """Async iteration over the lines of ``fd`` (a str per line, newline kept), for ``stdio_server(stdin=…)``.

    Taking it points ``fd`` itself at /dev/null, as the SDK does for stdin it reads: a tool running inside
    nami (an entry point) that reads stdin gets EOF instead of the protocol's bytes."""

    def __init__(self, fd: int = 0):
        self._queue: asyncio.Queue[str | None] | None = None
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
                pending += chunk
                while (end := pending.find(b"\n")) >= 0:
                    put(pending[: end + 1].decode("utf-8", "replace"))
                    del pending[: end + 1]
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
