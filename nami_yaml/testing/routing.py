"""Which scripted response answers a request, when one server plays the model for several runs.

Three ways, the first that has anything scripted wins:

- by task: a mapping from a substring of the run's first user message to its responses, so concurrent
  runs (batch jobs, parallel tests) each get their own answers whatever order their requests arrive in;
- by run: one script per conversation, handed out in order as new conversations start (a conversation
  is its messages up to and including the first user message);
- one shared queue, answered in order whoever asks.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from nami_yaml.testing.responses import ScriptedResponse, text

Scripted = ScriptedResponse | str


def _queue(responses: Iterable[Scripted]) -> deque[ScriptedResponse]:
    return deque(text(r) if isinstance(r, str) else r for r in responses)


def first_user_text(body: Mapping[str, Any]) -> str:
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def conversation_key(body: Mapping[str, Any]) -> str:
    messages = body.get("messages") or []
    end = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
               len(messages) - 1)
    return json.dumps(messages[: end + 1], sort_keys=True)


class ScriptRouter:
    """The scripted responses of one server, and the choice of which one answers a request (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.shared: deque[ScriptedResponse] = deque()
        self.runs: deque[deque[ScriptedResponse]] = deque()  # not started yet
        self.started: dict[str, deque[ScriptedResponse]] = {}  # conversation key -> its run's script
        self.tasks: list[tuple[str, deque[ScriptedResponse]]] = []

    def add(self, responses: Iterable[Scripted]) -> None:
        with self._lock:
            self.shared.extend(_queue(responses))

    def add_run(self, responses: Iterable[Scripted]) -> None:
        with self._lock:
            self.runs.append(_queue(responses))

    def add_task(self, substring: str, responses: Iterable[Scripted]) -> None:
        with self._lock:
            for key, queue in self.tasks:
                if key == substring:
                    queue.extend(_queue(responses))
                    return
            self.tasks.append((substring, _queue(responses)))

    @property
    def remaining(self) -> int:
        with self._lock:
            queues = [self.shared, *self.runs, *self.started.values(), *(q for _, q in self.tasks)]
            return sum(len(q) for q in queues)

    def next_for(self, body: Mapping[str, Any]) -> tuple[ScriptedResponse | None, str]:
        """The response for ``body``, or None and why nothing is scripted for it."""
        with self._lock:
            queue, why = self._queue_for(body)
            if queue:
                return queue.popleft(), ""
            return None, why

    def _queue_for(self, body: Mapping[str, Any]) -> tuple[deque[ScriptedResponse] | None, str]:
        if self.tasks:
            said = first_user_text(body)
            for key, queue in self.tasks:
                if key in said:
                    return queue, f"the script for task {key!r} is exhausted"
            keys = ", ".join(repr(k) for k, _ in self.tasks)
            return None, f"no task script matches the first user message {said[:80]!r} (tasks: {keys})"
        if self.runs or self.started:
            key = conversation_key(body)
            if key not in self.started:
                if not self.runs:
                    return None, f"a new conversation started but all {len(self.started)} run scripts are taken"
                self.started[key] = self.runs.popleft()
            return self.started[key], f"the script of run #{list(self.started).index(key) + 1} is exhausted"
        return self.shared, "script exhausted"
