"""StdinLines (serve/stdin.py): the client's lines on ``nami mcp serve``'s stdin, framed however the bytes
arrive, and a line past the limit ends the session with the reason kept."""

from __future__ import annotations

import asyncio
import os
import threading

from tests.programs import need_mcp

need_mcp()

from nami_yaml.serve.stdin import StdinLines  # noqa: E402


def lines_of(chunks: list[bytes], max_line: int = 1000) -> tuple[list[str], str | None]:
    read, write = os.pipe()
    stdin = StdinLines(read, max_line=max_line)
    os.close(read)  # StdinLines keeps a duplicate (and points the descriptor at /dev/null)

    def feed() -> None:
        try:
            for chunk in chunks:
                os.write(write, chunk)
        except BrokenPipeError:
            pass
        finally:
            os.close(write)

    async def collect() -> list[str]:
        return [line async for line in stdin]

    writer = threading.Thread(target=feed)
    writer.start()
    lines = asyncio.run(collect())
    writer.join(10)
    return lines, stdin.problem


def test_lines_are_framed_however_the_bytes_arrive() -> None:
    lines, problem = lines_of([b'{"a"', b": 1}\n{", b'"b": 2}\n{"c": 3}\n{"d"', b": 4}"])
    assert lines == ['{"a": 1}\n', '{"b": 2}\n', '{"c": 3}\n', '{"d": 4}'] and problem is None


def test_a_line_past_the_limit_ends_the_session_and_says_why() -> None:
    lines, problem = lines_of([b"ok\n", b"x" * 600, b"x" * 600, b"never\n"], max_line=1000)
    assert lines == ["ok\n"]
    assert problem == "the client sent a message longer than 1,000 bytes; the session ends"


def test_a_whole_line_past_the_limit_in_one_chunk_ends_it_too() -> None:
    lines, problem = lines_of([b"ok\n" + b"y" * 2000 + b"\nlater\n"], max_line=1000)
    assert lines == ["ok\n"] and problem is not None
