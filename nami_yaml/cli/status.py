"""The status line on stderr: a spinner, what nami waits for and for how long, the step and the tokens
so far, redrawn in place on one line and erased when there is nothing to wait for.

Only on a terminal (``Terminal.status``). Everything else written to the terminal goes through
:meth:`StatusLine.clear_for_output`, under one lock, so the spinner thread never draws into the middle
of an answer, a tool line or a prompt.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from nami_yaml.cli.style import Paint
from nami_yaml.display import visible_line

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between frames
SHOW_AFTER = 0.15  # a wait shorter than this (a fast read) never flashes a spinner
QUIET_AFTER = 1.0  # while text streams, a pause this long (a long tool call being written) shows it again
CLEAR = "\r\x1b[K"


def elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest:02d}s"


class StatusLine:
    """``show(label)`` starts (or relabels) the wait; ``streaming()`` says output is arriving, which
    hides the line until it pauses at the start of a line; ``hide()`` ends the wait. ``details`` gives
    the rest of the line (step, tokens)."""

    def __init__(self, stream: TextIO, paint: Paint, details: Callable[[], str] | None = None,
                 at_line_start: Callable[[], bool] | None = None):
        self.stream = stream
        self.paint = paint
        self.details = details or (lambda: "")
        self.at_line_start = at_line_start or (lambda: True)
        self.lock = threading.RLock()
        self._label: str | None = None
        self._since = 0.0
        self._last_output = 0.0
        self._streaming = False
        self._drawn = False
        self._frame = 0
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._paused = 0

    # -- what is going on -----------------------------------------------------------------------------

    def show(self, label: str, *, same_wait: bool = False) -> None:
        """``same_wait``: only the label changes (a call said how far it is); the time goes on."""
        with self.lock:
            if (label != self._label and not same_wait) or self._streaming:
                self._since = time.monotonic()
            self._label, self._streaming = label, False
            self._start()

    def streaming(self) -> None:
        """Output arrived: the line goes away until the output pauses."""
        with self.lock:
            self._streaming = True
            self._last_output = time.monotonic()
            self._erase()

    def hide(self) -> None:
        with self.lock:
            self._label = None
            self._erase()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing drawn while a question is on screen; the wait goes on afterwards, without that time."""
        with self.lock:
            self._paused += 1
            asked_at = time.monotonic()
            self._erase()
        try:
            yield
        finally:
            with self.lock:
                self._paused -= 1
                now = self._last_output = time.monotonic()
                # The time a person took to answer is not the wait's: the line counts the model's and
                # the tools' time only.
                self._since += now - asked_at

    @contextlib.contextmanager
    def clear_for_output(self) -> Iterator[None]:
        """Hold the line off while the caller writes (on stdout or stderr); it comes back on the next tick."""
        with self.lock:
            self._erase()
            yield

    def close(self) -> None:
        self.hide()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._wake.set()
            thread.join(timeout=1)

    # -- drawing --------------------------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None:
            self._wake.clear()
            self._thread = threading.Thread(target=self._run, name="nami-status", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._wake.wait(TICK):
            with self.lock:
                if self._thread is not threading.current_thread():
                    return
                self._tick()

    def _tick(self) -> None:
        now = time.monotonic()
        if self._label is None or self._paused or now - self._since < SHOW_AFTER:
            return
        if self._streaming and (now - self._last_output < QUIET_AFTER or not self.at_line_start()):
            return
        self._frame = (self._frame + 1) % len(FRAMES)
        parts = [self._label, elapsed(now - self._since)]
        detail = self.details()
        if detail:
            parts.append(detail)
        width = shutil.get_terminal_size((80, 24)).columns
        text = visible_line(" · ".join(parts))  # a label may hold a tool name the model made up
        if len(text) + 3 > width:  # never wrap: a wrapped line cannot be erased with \r
            text = text[: max(0, width - 4)] + "…"
        try:
            self.stream.write(f"{CLEAR}{self.paint.cyan(FRAMES[self._frame])} {self.paint.dim(text)}")
            self.stream.flush()
            self._drawn = True
        except (OSError, ValueError):  # the terminal went away
            self._label = None

    def _erase(self) -> None:
        if self._drawn:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write(CLEAR)
                self.stream.flush()
            self._drawn = False
