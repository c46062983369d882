"""The stdio transport for the MCP servers nami starts.

The SDK's ``stdio_client`` would spawn the server itself; here the process comes from
``runners/process.py`` (the one subprocess path: a scrubbed environment, its own session and process
group, no descriptors of ours) and only its pipes are bridged to the SDK's message streams. Stopping it
(close stdin, a grace period, then the whole process group) is ``process.stop_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

MAX_MESSAGE = 64 * 1024 * 1024  # one JSON-RPC line; a server sending more is treated as broken


@asynccontextmanager
async def process_streams(proc: subprocess.Popen[bytes],
                          on_eof: Callable[[], Awaitable[None]]) -> AsyncIterator[Any]:
    """The (read, write) message streams of a started server. ``on_eof`` is awaited when the server closes
    its stdout (it exited, or is about to), before the session sees the end of the stream."""
    assert proc.stdin is not None and proc.stdout is not None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE)
    read_pipe, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
    write_pipe, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), proc.stdin)
    writer = asyncio.StreamWriter(write_pipe, write_protocol, None, loop)
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_messages() -> None:
        async with to_session:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # longer than MAX_MESSAGE: the rest of the stream cannot be framed
                    await to_session.send(ValueError(f"a message longer than {MAX_MESSAGE:,} bytes"))
                    break
                except OSError:
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:  # a stray print on stdout: the session hears of it and goes on
                    await to_session.send(exc)
                    continue
                await to_session.send(SessionMessage(message))
            await on_eof()

    async def write_messages() -> None:
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                try:
                    writer.write(data)
                    await writer.drain()
                except (ConnectionError, OSError, RuntimeError):
                    return  # the server is gone; the reader sees the end of its stdout

    async with anyio.create_task_group() as group:
        group.start_soon(read_messages)
        group.start_soon(write_messages)
        try:
            yield from_server, to_server
        finally:
            group.cancel_scope.cancel()
            write_pipe.close()
            read_pipe.close()


DROPPED = b"\n[nami: the rest of this server's output was dropped: it passed %d bytes]\n"


def keep_stderr(stderr: IO[bytes], log: IO[bytes], limit: int) -> threading.Thread:
    """Copy a server's stderr into ``log`` up to ``limit`` bytes, then keep reading it into nothing, so a
    server that writes without end neither fills the disk nor blocks on a full pipe. The thread closes both
    when the server (and whatever it left holding the pipe) is gone."""

    def copy() -> None:
        kept = 0
        try:
            while chunk := os.read(stderr.fileno(), 65536):
                if kept < limit:
                    part = chunk[: limit - kept]
                    kept += len(part)
                    log.write(part)
                    if kept >= limit:
                        log.write(DROPPED % limit)
                    log.flush()
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                stderr.close()
            with contextlib.suppress(OSError, ValueError):
                log.close()

    thread = threading.Thread(target=copy, name="nami-mcp-stderr", daemon=True)
    thread.start()
    return thread
