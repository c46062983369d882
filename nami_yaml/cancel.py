"""Cancellation that can be scoped: one token for a run, a child token per tool call.

Cancelling the run cancels every call in it; cancelling one call (an MCP client's ``notifications/cancelled``)
leaves the others running. Tools only ever poll ``is_set()`` or ``wait()``, the same interface as
``threading.Event``, which a token can stand in for.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import weakref
from collections.abc import Iterator

try:  # signal's own functions, without the wrappers that turn every handler into an enum member and back
    import _signal as _raw_signal
except ImportError:  # not CPython
    _raw_signal = signal  # type: ignore[no-redef]


class CancelToken:
    def __init__(self, parent: CancelToken | None = None):
        self._event = threading.Event()
        # Made with the first child: a call's own token (one per tool call) never has any.
        self._children: weakref.WeakSet[CancelToken] | None = None
        self._lock = threading.Lock()
        if parent is not None:
            with parent._lock:
                if parent._children is None:
                    parent._children = weakref.WeakSet()
                parent._children.add(self)
                if parent.is_set():
                    self._event.set()

    def child(self) -> CancelToken:
        """A token cancelled with this one, that can also be cancelled alone."""
        return CancelToken(self)

    def set(self) -> None:
        with self._lock:
            self._event.set()
            children = list(self._children or ())
        for child in children:
            child.set()

    def clear(self) -> None:
        """Re-arm this token for a new run. Children keep their state: each belongs to a finished call."""
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


@contextlib.contextmanager
def cancel_on_interrupt(token: CancelToken) -> Iterator[bool]:
    """While the block runs, Ctrl-C (SIGINT) sets ``token`` instead of raising; a second one raises
    KeyboardInterrupt as usual. For work done on the thread Ctrl-C interrupts that stops by itself once
    cancelled, and keeps what it has so far (a tool's process, killed, and its output until then).

    Yields whether the block may run such work here: on another thread always (signals are handled on
    the main thread only), on the main thread only where Python's own handler is in place (one of
    somebody else's, or SIGINT ignored, is theirs to keep)."""
    if threading.current_thread() is not threading.main_thread():
        yield True
        return
    # Once per tool call that runs here: signal.signal()'s conversions of each handler to an enum member
    # (and the ValueError a function raises on the way) were most of this function's cost (bench/: per step).
    previous = _raw_signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield False
        return

    def interrupt(signum: int, frame: object) -> None:
        if token.is_set():
            raise KeyboardInterrupt
        token.set()

    _raw_signal.signal(signal.SIGINT, interrupt)
    try:
        yield True
    finally:
        _raw_signal.signal(signal.SIGINT, previous)
