"""Cancellation that can be scoped: one token for a run, a child token per tool call.

Cancelling the run cancels every call in it; cancelling one call (an MCP client's ``notifications/cancelled``)
leaves the others running. Tools only ever poll ``is_set()`` or ``wait()``, the same interface as
``threading.Event``, which a token can stand in for.
"""

from __future__ import annotations

import threading
import weakref


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
