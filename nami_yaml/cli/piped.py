"""What is piped into ``nami run``: attached to the task (``journalctl -u nginx | nami run "why?"``), or
the task itself (``nami run -``)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from nami_yaml.display import plural
from nami_yaml.runners.output import truncate_text


def piped_stdin(stream: BinaryIO | None = None) -> bytes | None:
    """Everything on stdin when it is a pipe or a file, else None.

    A terminal is never read (that is a person, not input), nor a socket or device: under cron, CI or
    ssh without a terminal, stdin may be left open with nothing ever written, and reading would hang.
    """
    stream = stream or sys.stdin.buffer
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return None
    return stream.read()


def with_attached_input(task: str, data: bytes, max_chars: int, spill_dir: Path | None) -> str:
    """The user's message: the task, then the piped input, capped like a tool result (head and tail,
    whole lines, the full text kept in a spill file), with a note when it was cut."""
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        return task
    capped, spill = truncate_text(text, max_chars, spill_dir)
    lines = text.count("\n") + (not text.endswith("\n"))
    note = ""
    if capped != text:
        where = f"; the whole input is in {spill}" if spill else ""
        note = (f" It was {plural(len(text), 'character')}, {plural(lines, 'line')}: only its start and end are shown"
                f"{where}.")
    body = capped if capped.endswith("\n") else capped + "\n"
    return f"{task}\n\nAttached input (piped to nami on stdin).{note}\n<<<\n{body}>>>"
