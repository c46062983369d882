"""Reading chat input: line editing and a history file on a terminal, plain lines from a pipe."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from nami_yaml.runtime import default_state_dir


class LineReader:
    def __init__(self, history: Path | None = None):
        self.interactive = sys.stdin.isatty()
        self.history = history or default_state_dir() / "chat_history"
        self._readline = None
        if self.interactive:
            try:
                import readline  # line editing; absent on some platforms, where input() still works
            except ImportError:
                readline = None  # type: ignore[assignment]
            self._readline = readline
            if readline is not None and self.history.is_file():
                with contextlib.suppress(OSError):
                    readline.read_history_file(str(self.history))

    def read(self, prompt: str) -> str | None:
        """A line, or None at end of input. Ctrl-C at the prompt discards the line and asks again."""
        if not self.interactive:
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        while True:
            try:
                return input(prompt)
            except EOFError:
                sys.stderr.write("\n")
                return None
            except KeyboardInterrupt:
                sys.stderr.write("^C\n")

    def close(self) -> None:
        if self._readline is not None:
            with contextlib.suppress(OSError):
                self.history.parent.mkdir(parents=True, exist_ok=True)
                self._readline.set_history_length(1000)
                self._readline.write_history_file(str(self.history))
                os.chmod(self.history, 0o600)
