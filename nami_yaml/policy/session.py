"""Answers a person gave for the rest of the session: "yes to this tool with these argument values"."""

from __future__ import annotations

import json
import threading

from nami_yaml.agent.toolbox import PreparedCall


class SessionApprovals:
    """Exact calls approved for the session. Only the same tool with the same argument values (after
    defaults) is approved again; a deny is never asked, so it is never skipped by this."""

    def __init__(self) -> None:
        self._approved: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def key(call: PreparedCall) -> str:
        # The reason a call is asked as a higher risk (code it runs changed) is part of what was approved.
        return json.dumps([call.name, call.arguments, getattr(call, "risk_reason", None)], sort_keys=True, ensure_ascii=False, default=str)

    def remember(self, call: PreparedCall) -> None:
        with self._lock:
            self._approved.add(self.key(call))

    def approved(self, call: PreparedCall) -> bool:
        with self._lock:
            return self.key(call) in self._approved

    def __len__(self) -> int:
        return len(self._approved)
