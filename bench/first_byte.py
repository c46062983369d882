"""Streaming: from the moment the fake server sends the first chunk of text to the moment that text can be
read from nami's terminal. The real `nami run` runs with stdout and stderr on pseudo-terminals (so it
renders Markdown and shows its status line, as for a user), and again with stdout on a pipe and stderr on
a terminal (`nami run … > answer.txt`: the answer goes to the pipe, and streams on the terminal for the
person watching; with both on pipes nothing streams, the answer is written whole at the end). The baseline is bench/minimal_loop.py printing each delta as it arrives, on the
same kind of terminal. The server waits between chunks, so the first chunk is unambiguous.

    python -m bench.first_byte
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, Row, Settings, bench_env, median, nami_command, scratch, write_project
from nami_yaml.testing import FakeOpenAIServer, text

ANSWER = "Benchmarked answer, streamed."
FIRST_WORD = b"Benchmarked"
CHUNK_DELAY = 0.2  # seconds between chunks; a quick run waits less (its figure only has to be sane)
QUICK_CHUNK_DELAY = 0.05
TIMEOUT = 30.0


def first_word_at(command: list[str], cwd: Path, env: dict[str, str], *, terminals: tuple[str, ...],
                  watch: str) -> float:
    """time.monotonic() when FIRST_WORD could be read from the child's ``watch`` stream ("stdout"/"stderr");
    the streams named in ``terminals`` are pseudo-terminals, the others pipes."""
    ends: dict[str, tuple[int, int]] = {}
    for name in ("stdout", "stderr"):
        ends[name] = pty.openpty() if name in terminals else os.pipe()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=ends["stdout"][1], stderr=ends["stderr"][1])
    for _, child_end in ends.values():
        os.close(child_end)
    readers = {ends[name][0]: name for name in ends}
    seen = {name: b"" for name in ends}
    found = None
    deadline = time.monotonic() + TIMEOUT
    try:
        while readers and time.monotonic() < deadline:
            ready, _, _ = select.select(list(readers), [], [], 0.5)
            now = time.monotonic()
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # a pty whose child end closed
                    data = b""
                if not data:
                    del readers[fd]
                    continue
                name = readers[fd]
                seen[name] += data
                if found is None and name == watch and FIRST_WORD in seen[name]:
                    found = now
    finally:
        process.wait(timeout=TIMEOUT)
        for fd, _ in ends.values():
            os.close(fd)
    if found is None:
        raise RuntimeError(f"{command[0]}: {FIRST_WORD!r} never appeared on {watch}: {seen}")
    return found


def measure(settings: Settings) -> list[Row]:
    rows = []
    delay = QUICK_CHUNK_DELAY if settings.quick else CHUNK_DELAY
    with scratch() as home, FakeOpenAIServer() as server:
        config = write_project(home / "project", server.base_url)
        env = bench_env(home)
        nami = [*nami_command(), "run", "--config", str(config), "say something"]
        minimal = [sys.executable, str(ROOT / "bench" / "minimal_loop.py"), server.base_url, "say something"]
        for terminal in (True, False):
            run_env = {k: v for k, v in env.items() if k != "NO_COLOR"} if terminal else env
            delays: dict[str, list[float]] = {"nami": [], "minimal": []}
            for _ in range(settings.repeat):
                for name, command, watch in (("nami", nami, "stdout" if terminal else "stderr"),
                                             ("minimal", minimal, "stdout")):
                    server.add(text(ANSWER, chunk_delay=delay))
                    # The minimal loop prints to stdout: a terminal, or the pipe the answer is redirected to.
                    ptys = ("stdout", "stderr") if terminal else ("stderr",) if name == "nami" else ()
                    seen = first_word_at(command, config.parent, run_env, terminals=ptys, watch=watch)
                    # Event 0 is the role with empty content (as real servers send it); event 1 has the text.
                    delays[name].append(seen - server.requests[-1].chunk_times[1])
            where = "a terminal (pty, rendered)" if terminal else "stderr's terminal, stdout a pipe (plain)"
            rows.append(Row(f"stream.first_byte.{'pty' if terminal else 'pipe'}",
                            f"first text chunk sent → first byte read, on {where}", median(delays["nami"]) * 1000,
                            "ms", median(delays["minimal"]) * 1000, "minimal loop printing deltas"))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=5)))
