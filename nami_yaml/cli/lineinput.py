"""Reading chat input: line editing, a history file and completion on a terminal, plain lines from a pipe.

A message may span lines: pasting keeps its newlines (readline's bracketed paste), Alt-Enter adds a line,
and so does a line ending in a backslash; Enter sends. Ctrl-C discards what is typed; at an empty prompt
it asks for a second Ctrl-C, which leaves (as does Ctrl-D). GNU readline does all of this, so there is
no new dependency; where Python has no readline, input() still works, line by line.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nami_yaml.xdg import default_state_dir

CONTINUE_PROMPT = "… "
LEAVE_HINT = "(Ctrl-C again or Ctrl-D to leave)"


class LineReader:
    def __init__(self, history: Path | None = None, complete: Callable[[str, str], Iterable[str]] | None = None):
        """``complete(text, line)``: the words that could finish ``text``, the word under the cursor in
        ``line`` (on a terminal, Tab completes)."""
        self.interactive = sys.stdin.isatty()
        self.history = history or default_state_dir() / "chat_history"
        self._readline = None
        self._complete = complete
        self._matches: list[str] = []
        self.armed = False  # the last thing was a Ctrl-C: another one at an empty prompt leaves
        if self.interactive:
            try:
                import readline  # line editing; absent on some platforms, where input() still works
            except ImportError:
                readline = None  # type: ignore[assignment]
            self._readline = readline
            if readline is not None:
                self._setup(readline)

    def _setup(self, rl: Any) -> None:
        if self.history.is_file():
            with contextlib.suppress(OSError):
                rl.read_history_file(str(self.history))
        # Alt-Enter (Esc, Enter) inserts a newline: the message goes on on the next line.
        rl.parse_and_bind(r'"\e\r": "\C-v\C-j"')
        rl.parse_and_bind("set enable-bracketed-paste on")
        if self._complete is not None:
            rl.set_completer_delims(" \t\n")
            rl.set_completer(self._completer)
            rl.parse_and_bind("tab: complete")

    def _completer(self, text: str, state: int) -> str | None:
        if state == 0:
            assert self._readline is not None and self._complete is not None
            try:
                self._matches = sorted(set(self._complete(text, self._readline.get_line_buffer())))
            except Exception:  # a completion must never break the prompt
                self._matches = []
        return self._matches[state] if state < len(self._matches) else None

    def read(self, prompt: str) -> str | None:
        """A message (possibly of several lines), or None at the end of input or when the user leaves."""
        first = self._line(prompt)
        if first is None:
            return None
        lines = [first]
        while lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
            lines[-1] = lines[-1][:-1]
            more = self._line(CONTINUE_PROMPT)
            if more is None:
                break
            lines.append(more)
        return "\n".join(lines)

    def _line(self, prompt: str) -> str | None:
        if not self.interactive:
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        while True:
            try:
                line = input(prompt)
            except EOFError:
                sys.stderr.write("\n")
                return None
            except KeyboardInterrupt:
                typed = self._readline.get_line_buffer() if self._readline is not None else ""
                if typed:
                    sys.stderr.write("\n")  # the line is dropped (left on screen); the prompt stays
                    self.armed = False
                    continue
                if self.armed:
                    sys.stderr.write("\n")
                    return None
                sys.stderr.write(f"\n{LEAVE_HINT}\n")
                self.armed = True
                continue
            self.armed = False
            return line

    def close(self) -> None:
        if self._readline is not None:
            with contextlib.suppress(OSError):
                self.history.parent.mkdir(parents=True, exist_ok=True)
                self._readline.set_history_length(1000)
                self._readline.write_history_file(str(self.history))
                os.chmod(self.history, 0o600)
