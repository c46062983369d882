"""A Model that answers from a script in memory: no HTTP, no openai. For loop tests and users' own tests
of agents, where the wire protocol is not what is being tested (the fake server covers that)."""

from __future__ import annotations

import copy
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from nami_yaml.model.types import AssistantTurn, ModelError, ToolCall, Usage
from nami_yaml.testing.responses import _AUTO, ScriptedResponse, text
from nami_yaml.testing.wire import protocol_problem, text_pieces


class ScriptedModel:
    """Replays ``ScriptedResponse`` objects (built with ``text``, ``tool_calls``, ``error``) in order.

    ``requests`` holds a deep copy of each request (``{"messages": [...], "tools": [...]}``). Like the fake
    server, it refuses a history a strict provider would refuse (a tool call left unanswered, say), so a
    test cannot pass on a request no real server would take.
    """

    def __init__(self, script: Iterable[ScriptedResponse | str] = (), *, strict: bool = True):
        self._script: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.strict = strict
        self._calls = 0
        self.add(*script)

    def add(self, *responses: ScriptedResponse | str) -> ScriptedModel:
        with self._lock:
            self._script.extend(text(r) if isinstance(r, str) else r for r in responses)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 on_text: Callable[[str], None] | None = None) -> AssistantTurn:
        body = {"model": "scripted", "messages": copy.deepcopy(messages)}
        if tools:
            body["tools"] = copy.deepcopy(tools)
        with self._lock:
            self.requests.append(body)
            response = self._script.popleft() if self._script else None
        problem = protocol_problem(body) if self.strict else None
        if problem:
            raise ModelError(f"request rejected (400) by the scripted model: {problem}", status=400)
        if response is None:
            raise ModelError("the scripted model has no more responses (add more with .add())")
        if response.status != 200:
            message = ((response.error_body or {}).get("error") or {}).get("message", "error")
            raise ModelError(f"scripted error ({response.status}): {message}", status=response.status)
        if _broken(response):
            # What the HTTP client makes of it once its retries are spent; the fake server tests the rest.
            raise ModelError("the scripted model sent a broken response (cut short or malformed)")
        for piece in text_pieces(response.content) if response.content and on_text else []:
            on_text(piece)  # type: ignore[misc]
        calls = []
        for index, scripted in enumerate(response.calls):
            self._calls += 1
            calls.append(ToolCall(scripted.id or f"call_{self._calls}_{index}", scripted.name, scripted.arguments))
        finish = response.finish_reason or ("tool_calls" if calls else "stop")
        return AssistantTurn(content=response.content, tool_calls=calls, finish_reason=finish,
                             usage=_usage(response, body))


def _broken(response: ScriptedResponse) -> bool:
    return (response.end_after is not None or response.drop_after is not None or response.malformed is not None
            or response.raw_events is not None)


def _usage(response: ScriptedResponse, body: dict[str, Any]) -> Usage | None:
    if response.usage is None:
        return None
    if response.usage is not _AUTO:
        data = response.usage
        details = data.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") or data.get("prompt_cache_hit_tokens") or 0
        reasoning = (data.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        return Usage(int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)), int(cached),
                     int(reasoning))
    produced = len(response.content or "") + sum(len(c.arguments) + len(c.name) for c in response.calls)
    return Usage(prompt_tokens=max(1, len(json.dumps(body)) // 4), completion_tokens=max(1, produced // 4))
