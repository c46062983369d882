"""Token accounting: every model request's usage as the server reported it, or an estimate marked as such
where it reported none, summed per run and per session, with the cost when prices are known.

The meter attaches to an agent in three places: a ``before_request`` hook (the size of the request about
to go out), an event sink (the assistant message and the ``usage`` event that follow it) and an
``after_run`` hook (the run's totals, for the ``final`` event).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from nami_yaml.agent.events import Event
from nami_yaml.agent.hooks import RequestInfo

CHARS_PER_TOKEN = 4  # the usual rule of thumb for English and code; calibrated by reported usage at run time

Pricer = Callable[["StepUsage"], "float | None"]


def estimate_tokens(chars: int, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    return math.ceil(chars / chars_per_token) if chars > 0 else 0


def request_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters of the messages and tools as the client sends them (compact JSON)."""
    return len(json.dumps(messages, ensure_ascii=False, separators=(",", ":"))) + tools_chars(tools)


def tools_chars(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))) if tools else 0


@dataclass
class StepUsage:
    """One model request. ``kind``: ``step`` for the loop's requests, ``compaction`` for a summary."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False
    cost: float | None = None
    kind: str = "step"

    def to_record(self) -> dict[str, Any]:
        return {"type": "usage", **vars(self)}  # the fields, in order (asdict() deep-copies every value)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StepUsage:
        def number(key: str) -> int:
            value = record.get(key)
            return int(value) if isinstance(value, (int, float)) else 0

        cost = record.get("cost")
        return cls(number("prompt_tokens"), number("cached_tokens"), number("completion_tokens"),
                   number("reasoning_tokens"), bool(record.get("estimated")),
                   float(cost) if isinstance(cost, (int, float)) else None, str(record.get("kind") or "step"))


@dataclass
class Totals:
    requests: int = 0  # every model request, compaction summaries included
    steps: int = 0  # the loop's requests
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    estimated_requests: int = 0  # requests whose usage is an estimate
    cost: float = 0.0
    unpriced_requests: int = 0  # requests with no known price: the cost is then a lower bound, or unknown

    def add(self, step: StepUsage) -> None:
        self.requests += 1
        self.steps += step.kind == "step"
        self.prompt_tokens += step.prompt_tokens
        self.cached_tokens += step.cached_tokens
        self.completion_tokens += step.completion_tokens
        self.reasoning_tokens += step.reasoning_tokens
        self.estimated_requests += step.estimated
        if step.cost is None:
            self.unpriced_requests += 1
        else:
            self.cost += step.cost

    def merge(self, other: Totals) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def known_cost(self) -> float | None:
        """The cost, or None when no request had a price."""
        return None if self.requests and self.unpriced_requests == self.requests else round(self.cost, 6)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Totals:
        """The inverse of :meth:`to_json` (a final event's totals), as far as it goes."""
        totals = cls(**{k: int(data.get(k) or 0) for k in (
            "requests", "steps", "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens",
            "estimated_requests")})
        cost = data.get("cost")
        totals.cost = float(cost or 0)
        totals.unpriced_requests = totals.requests if cost is None else (0 if data.get("cost_complete") else 1)
        return totals

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps, "requests": self.requests, "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens, "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens, "estimated": self.estimated_requests > 0,
            "estimated_requests": self.estimated_requests, "cost": self.known_cost,
            "cost_complete": self.unpriced_requests == 0,
        }


@dataclass
class UsageMeter:
    """Counts the requests of one agent. ``listeners`` receive each StepUsage (a session file records them)."""

    price: Pricer | None = None
    session: Totals = field(default_factory=Totals)  # everything in this session, earlier runs included
    run: Totals = field(default_factory=Totals)  # the current run
    listeners: list[Callable[[StepUsage], None]] = field(default_factory=list)
    chars_per_token: float = CHARS_PER_TOKEN
    largest_completion: int = 0  # the most output one request of this run produced (for cost estimates)
    _request_chars: int = 0  # the request in flight
    _awaiting: StepUsage | None = None  # its estimate, until the server's usage replaces it
    # The tool list of the run and its size: the same list goes with every request of a run.
    _tools: tuple[list[dict[str, Any]], int, int] | None = None

    # -- estimates ------------------------------------------------------------------------------------

    def request_chars(self, info: RequestInfo) -> int:
        """Characters of the request ``info`` describes, as :func:`request_chars` counts them, without
        serialising the conversation again: the history counts each message once, the tools once a run."""
        tools = info.tools
        if self._tools is None or self._tools[0] is not tools or self._tools[1] != len(tools):
            self._tools = (tools, len(tools), tools_chars(tools))
        return info.history.chars + self._tools[2]

    def estimate_request(self, info: RequestInfo) -> int:
        """Prompt tokens of the request ``info`` describes, by size, calibrated on reported usage."""
        return estimate_tokens(self.request_chars(info), self.chars_per_token)

    # -- the hooks ------------------------------------------------------------------------------------

    def before_request(self, info: RequestInfo) -> None:
        self._settle()
        self._request_chars = self.request_chars(info)

    def __call__(self, event: Event) -> None:
        kind = event.type
        if kind == "usage":
            if self._awaiting is not None:
                self._reported(event)
            return
        self._settle()
        message = getattr(event, "message", None) if kind == "history_append" else None
        if isinstance(message, dict) and message.get("role") == "assistant":
            produced = len(message.get("content") or "") + len(json.dumps(message.get("tool_calls") or []))
            self._awaiting = StepUsage(prompt_tokens=estimate_tokens(self._request_chars, self.chars_per_token),
                                       completion_tokens=estimate_tokens(produced, self.chars_per_token),
                                       estimated=True)

    def after_run(self, outcome: Any) -> dict[str, Any]:
        """The run's totals (for the final event), then a fresh count for the next run."""
        self._settle()
        totals, self.run, self.largest_completion = self.run, Totals(), 0
        return totals.to_json()

    # -- recording ------------------------------------------------------------------------------------

    def record(self, step: StepUsage) -> None:
        """Count one request (the loop's, or another one such as a compaction summary)."""
        if step.cost is None and self.price is not None:
            step.cost = self.price(step)
        self.largest_completion = max(self.largest_completion, step.completion_tokens)
        self.run.add(step)
        self.session.add(step)
        for listener in self.listeners:
            listener(step)

    def _reported(self, event: Any) -> None:
        prompt = getattr(event, "prompt_tokens", None)
        completion = getattr(event, "completion_tokens", None)
        step, self._awaiting = self._awaiting, None
        assert step is not None
        if prompt is None and completion is None:  # an event that says "not reported": keep the estimate
            self.record(step)
            return
        if prompt and self._request_chars:
            # What this server's tokenizer makes of our requests sizes the next estimate.
            self.chars_per_token = max(1.0, self._request_chars / prompt)
        self.record(StepUsage(int(prompt or 0), int(getattr(event, "cached_tokens", 0) or 0), int(completion or 0),
                              int(getattr(event, "reasoning_tokens", 0) or 0)))

    def _settle(self) -> None:
        """A request whose assistant message came with no usage event: count the estimate."""
        if self._awaiting is not None:
            step, self._awaiting = self._awaiting, None
            self.record(step)
