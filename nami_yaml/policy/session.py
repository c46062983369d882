"""Answers a person gave for the rest of the session: "yes to this very call again"."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from nami_yaml.agent.toolbox import PreparedCall


class SessionApprovals:
    """Exact calls approved for the session: only the same call (by ``key``; the guards give the digest of
    everything that decides what runs) is approved again; a deny is never asked, so it is never skipped."""

    def __init__(self, key: Callable[[PreparedCall], str] | None = None, *, expires: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._approved: dict[str, float] = {}  # key -> when it was approved (``clock``)
        self._lock = threading.Lock()
        # What "the same call" means: given by the guards as the digest of everything that decides what runs
        # (approvals/binding.py: argv, stdin, environment, cwd, target, sandbox), not the arguments alone.
        self._key = key or self.arguments_key
        # An approval kept for a retry counts this long after it was given (``approvals.expires``), then the
        # same call is asked again: a yes given hours ago in a run nobody watches is not a yes for now.
        self._expires = expires
        self._clock = clock

    @staticmethod
    def arguments_key(call: PreparedCall) -> str:
        # The reason a call is asked as a higher risk (code it runs changed) is part of what was approved.
        return json.dumps([call.name, call.arguments, getattr(call, "risk_reason", None)], sort_keys=True,
                          ensure_ascii=False, default=str)

    def key(self, call: PreparedCall) -> str:
        return self._key(call)

    def remember(self, call: PreparedCall) -> None:
        with self._lock:
            self._approved[self.key(call)] = self._clock()

    def approved(self, call: PreparedCall) -> bool:
        key = self.key(call)
        with self._lock:
            given = self._approved.get(key)
            if given is None:
                return False
            if self._expires is not None and self._clock() - given > self._expires:
                del self._approved[key]  # expired: asked again, and kept again only if approved again
                return False
            return True

    def __len__(self) -> int:
        return len(self._approved)
