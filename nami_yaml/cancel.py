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


class CancelToken:
    def __init__(self, parent: CancelToken | None = None):
        self._event = threading.Event()
        self._children: weakref.WeakSet[CancelToken] = weakref.WeakSet()
        self._lock = threading.Lock()
        if parent is not None:
            with parent._lock:
                parent._children.add(self)
                if parent.is_set():
                    self._event.set()

    def child(self) -> CancelToken:
        """A token cancelled with this one, that can also be cancelled alone."""
        return CancelToken(self)

    def set(self) -> None:
        with self._lock:
            self._event.set()
            children = list(self._children)
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
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield False
        return

    def interrupt(signum: int, frame: object) -> None:
        if token.is_set():
            raise KeyboardInterrupt
        token.set()

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, previous)
