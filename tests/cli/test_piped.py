"""What counts as piped input: a pipe or a file, never a terminal or a socket left open by cron or ssh."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from nami_yaml.cli.piped import piped_stdin, with_attached_input


def test_a_pipe_and_a_file_are_read(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.write(write, b"from a pipe\n")
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        assert piped_stdin(stream) == b"from a pipe\n"
    (tmp_path / "in.txt").write_bytes(b"from a file")
    with open(tmp_path / "in.txt", "rb") as stream:
        assert piped_stdin(stream) == b"from a file"


def test_a_socket_nobody_writes_to_is_not_waited_on() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs, theirs.makefile("rb") as stream:
        assert piped_stdin(stream) is None  # would block forever if it were read


def test_blank_input_adds_nothing_and_undecodable_bytes_are_replaced() -> None:
    assert with_attached_input("task", b" \n\n", 100, None) == "task"
    message = with_attached_input("task", b"caf\xe9\n", 100, None)
    assert message == "task\n\nAttached input (piped to nami on stdin).\n<<<\ncaf\ufffd\n>>>"
