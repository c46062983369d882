"""nami in a real pseudo-terminal (pexpect), and what a person would see on it (pyte, a terminal emulator):
the screen and the scrollback above it, after every escape sequence has done its work."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
import pyte

from nami_yaml.testing import FakeOpenAIServer

COLUMNS, ROWS = 120, 40
SGR = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = r"›(?:\x1b\[0m)? "  # chat's prompt, coloured or not
COLOR_SGR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|9[0-7]|4[0-9]|10[0-7])(?:;[0-9;]*)?m")


class Terminal:
    """A nami process on a pty of COLUMNS x ROWS; ``raw`` is every byte it wrote, ``lines()`` the screen."""

    def __init__(self, server: FakeOpenAIServer | None, args: list[str], cwd: Path, env: dict[str, str] | None = None,
                 timeout: float = 30):
        full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
        full_env.update({"TERM": "xterm-256color", "DEEPSEEK_API_KEY": "test-key", "NAMI_MODEL": "fake-model"})
        if server is not None:
            full_env["NAMI_BASE_URL"] = server.base_url
        full_env.update(env or {})
        self.child = pexpect.spawn(sys.executable, ["-m", "nami_yaml", *args], cwd=str(cwd), env=full_env,
                                   encoding="utf-8", codec_errors="replace", timeout=timeout,
                                   dimensions=(ROWS, COLUMNS))
        self.raw = ""
        self._seen = 0  # how much of raw expect() has already looked at

    def expect(self, pattern: str | Any, timeout: float = -1) -> str:
        """Wait for ``pattern`` (a regex) in what is written after the last match; returns all text so far.
        ``timeout`` -1: the one given when the terminal was opened."""
        self.child.expect(pattern, timeout=timeout)
        self.raw += self.child.before + (self.child.after if isinstance(self.child.after, str) else "")
        return self.raw

    def send(self, text: str) -> None:
        self.child.send(text)

    def finish(self, timeout: float = 30) -> int:
        """Read to the end; the exit status."""
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.raw += self.child.before
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)

    def lines(self) -> list[str]:
        """Everything on the screen and in the scrollback, as a person sees it (trailing blanks trimmed)."""
        return screen_lines(self.raw)

    def text(self) -> str:
        return "\n".join(self.lines()).strip("\n")

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def screen_lines(raw: str, columns: int = COLUMNS, rows: int = ROWS) -> list[str]:
    screen = pyte.HistoryScreen(columns, rows, history=10_000)
    screen.set_mode(pyte.modes.LNM)  # a pty turns \n into \r\n; a StringIO feed does not
    pyte.Stream(screen).feed(raw)
    history = ["".join(row[x].data for x in range(columns)) for row in screen.history.top]
    return [line.rstrip() for line in history + list(screen.display)]
