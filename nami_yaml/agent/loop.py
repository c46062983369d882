"""The agent loop: ask the model, run the tools it calls, feed the results back, until it answers.

It knows a Model, a Toolbox (both protocols) and its Hooks, and nothing about YAML, config, policy or the
CLI. The history is append-only between explicit replacements and the tool list only ever grows at its end
(it is asked for before each request: a tool may load more), so every request starts with the exact bytes
of the previous one (provider prompt caches hit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from nami_yaml.agent.events import (
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    MessageEvent,
    ModelResponded,
    RequestStarted,
    RunStarted,
    TextDelta,
    UsageEvent,
    usage_dict,
)
from nami_yaml.agent.history import History
from nami_yaml.agent.hooks import Hooks, RequestInfo, StopRun
from nami_yaml.agent.tool_phase import NOT_RUN, Interrupted, ToolPhase
from nami_yaml.agent.toolbox import Toolbox
from nami_yaml.cancel import CancelToken
from nami_yaml.model.types import AssistantTurn, Model, ModelError, Usage
from nami_yaml.setting_defaults import LIMITS

# "max_cost" and "stopped" come from a before_request hook raising StopRun (a cost limit, say);
# "invalid_answer" from an after_answer hook raising it (an answer that never matched its schema).
Status = Literal["answered", "max_steps", "max_cost", "stopped", "interrupted", "error", "invalid_answer"]

ANSWER_CUT_OFF = "The answer was cut off at the model's output limit (finish_reason: length)."
INTERRUPTED_RUN = "Interrupted by the user."
# Ends the text of an answer stopped while it streamed; kept in the history so the next turn knows.
INTERRUPTED_MARK = "[Interrupted by the user: this answer is incomplete.]"


@dataclass
class RunOutcome:
    status: Status
    final_text: str | None
    error: str | None  # why the run stopped; for "answered", a note (the answer was cut off)
    steps: int
    messages: list[dict[str, Any]] = field(default_factory=list)  # the whole history after the run
    # From the after_run hooks: the run's one count of requests, tokens (estimated where the server reported
    # none) and cost. The loop counts nothing itself: an accounting hook (an Agent's usage meter) does.
    totals: dict[str, Any] = field(default_factory=dict)
    # The answer as a value, when an after_run hook read it as one (``structured``; null is a value too).
    answer: Any = None
    structured: bool = False

    @property
    def usage(self) -> Usage:
        """The run's tokens, from ``totals``; ``reported`` is False when the server reported none (or no
        accounting hook counted)."""
        return usage_of(self.totals)


@dataclass
class RunState:
    """One ``run``: its history, the tool list sent with every request, and what it has used so far."""

    history: History
    tools: list[dict[str, Any]]
    steps: int = 0
    last_usage: Usage | None = None
    streamed: list[str] | None = None  # text of the model request in flight, as it arrived


@dataclass
class AgentLoop:
    model: Model
    toolbox: Toolbox
    hooks: Hooks = field(default_factory=Hooks)
    # The limits.* settings' defaults (nami_yaml.setting_defaults); an Agent passes the effective ones.
    max_steps: int = LIMITS["max_steps"]
    max_parallel_tools: int = LIMITS["max_parallel_tools"]
    # Calls of one response that run; the rest are answered "not run".
    max_tool_calls_per_turn: int = LIMITS["max_tool_calls_per_turn"]
    cancel: CancelToken = field(default_factory=CancelToken)
    events: EventBus = field(default_factory=EventBus)
    # After Ctrl-C, how long to wait for running tools to die before giving up on them.
    interrupt_grace: float = 10.0

    def run(self, history: History | list[dict[str, Any]]) -> RunOutcome:
        """Extend the history until the model answers or the run stops. Never raises for model, tool or
        interrupt failures (the outcome says what happened). A plain list is extended in place."""
        if not isinstance(history, History):
            history = History(history, emit=self.events)
        self.cancel.clear()
        self._emit(RunStarted())
        state = RunState(history, [])  # the tools are asked for before each request
        try:
            while state.steps < self.max_steps:
                outcome = self.step(state)
                if outcome is not None:
                    return outcome
        except (KeyboardInterrupt, Interrupted):
            self.cancel.set()
            _answer_dangling(history)
            _keep_partial_answer(history, state.streamed)
            return self._finish(state, "interrupted", None, INTERRUPTED_RUN)
        steps = f"{self.max_steps} step{'s' if self.max_steps != 1 else ''}"
        message = f"Stopped after {steps} without a final answer (max_steps reached)."
        return self._finish(state, "max_steps", None, message)

    def step(self, state: RunState) -> RunOutcome | None:
        """One model request and the tool calls it makes. An outcome when the run ends, else None."""
        if self.cancel.is_set():
            return self._finish(state, "interrupted", None, INTERRUPTED_RUN)
        turn = self._query(state)
        state.streamed = None
        if isinstance(turn, RunOutcome):
            return turn
        state.steps += 1
        state.last_usage = turn.usage
        state.history.append(turn.to_message())
        if turn.usage is not None:
            self._emit(UsageEvent(**usage_dict(turn.usage)))
        if turn.content:
            self._emit(MessageEvent(turn.content))
        self._emit(ModelResponded(state.steps, turn.finish_reason,
                                  usage_dict(turn.usage) if turn.usage is not None else None))
        if not turn.tool_calls:
            try:
                reply = self._review(turn.content)
            except StopRun as stop:
                return self._finish(state, stop.status, turn.content, str(stop))  # type: ignore[arg-type]
            if reply is not None:
                state.history.append({"role": "user", "content": reply})
                return None
            note = ANSWER_CUT_OFF if turn.finish_reason == "length" else None
            return self._finish(state, "answered", turn.content, note)
        phase = ToolPhase(self.toolbox, self.hooks, self._emit, self.cancel,
                          max_parallel=self.max_parallel_tools, interrupt_grace=self.interrupt_grace,
                          max_calls=self.max_tool_calls_per_turn)
        if not phase.run(turn, state.history):
            return self._finish(state, "interrupted", None, INTERRUPTED_RUN)
        return None

    # -- the model request ----------------------------------------------------------------------------

    def _query(self, state: RunState) -> AssistantTurn | RunOutcome:
        try:
            return self._request(state)
        except StopRun as stop:
            return self._finish(state, stop.status, None, str(stop))  # type: ignore[arg-type]
        except ModelError as error:
            self._emit(ErrorEvent(str(error)))
            return self._finish(state, "error", None, str(error))

    def _request(self, state: RunState) -> AssistantTurn:
        """The before_request hooks, then the request. Raises ModelError, or StopRun from a hook."""
        # Asked again each step: a tool may have added definitions (load_tools), which the toolbox only
        # ever appends, so what was sent before is sent again byte for byte.
        state.tools = self.toolbox.definitions()
        self._before_request(state, None)
        try:
            return self._complete(state)
        except ModelError as error:
            # A context that no longer fits may fit once a hook has compacted it: one more try.
            if error.kind != "context_length" or not self._before_request(state, error):
                raise
        try:
            return self._complete(state)
        except ModelError as error:
            if error.kind != "context_length":
                raise
            raise ModelError(f"{error} (even after compacting the history once)", status=error.status,
                             kind=error.kind, context_window=error.context_window) from error

    def _complete(self, state: RunState) -> AssistantTurn:
        streamed = state.streamed = []

        def on_text(text: str) -> None:
            if self.cancel.is_set():  # stops a streaming answer when the run is cancelled from another thread
                raise Interrupted
            # Kept before it is shown: a Ctrl-C landing in between must not lose text the user saw.
            streamed.append(text)
            self._emit(TextDelta(text))

        self._emit(RequestStarted(state.steps + 1))
        return self.model.complete(state.history.messages, state.tools, on_text=on_text)

    def _before_request(self, state: RunState, error: ModelError | None) -> bool:
        """Run the before_request hooks; True if one of them replaced the history."""
        replaced = False
        for hook in self.hooks.before_request:
            info = RequestInfo(state.history, state.tools, state.steps + 1, state.last_usage, error)
            messages = hook(info)
            if messages is not None:
                state.history.replace(messages, "compaction")
                replaced = True
        return replaced

    def _review(self, text: str | None) -> str | None:
        """The after_answer hooks' verdict on a final answer: a message to send back, or None to accept."""
        for hook in self.hooks.after_answer:
            reply = hook(text)
            if reply is not None:
                return reply
        return None

    # -- events ---------------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        self.events(event)

    def _finish(self, state: RunState, status: Status, text: str | None, error: str | None) -> RunOutcome:
        outcome = RunOutcome(status=status, final_text=text, error=error, steps=state.steps,
                             messages=state.history.messages)
        for hook in self.hooks.after_run:
            outcome.totals.update(hook(outcome) or {})
        usage = outcome.usage
        self._emit(FinalEvent(text=text, status=status, usage=usage_dict(usage), error=error,
                              totals=outcome.totals or None, usage_reported=usage.reported,
                              answer=outcome.answer, structured=outcome.structured))
        return outcome


def usage_of(totals: dict[str, Any]) -> Usage:
    """The token fields of an accounting hook's totals, as a Usage."""

    def count(key: str) -> int:
        value = totals.get(key)
        return int(value) if isinstance(value, (int, float)) else 0

    requests = count("requests")
    reported = requests > 0 and count("estimated_requests") < requests
    return Usage(count("prompt_tokens"), count("completion_tokens"), count("cached_tokens"), count("reasoning_tokens"),
                 reported=reported)


def _keep_partial_answer(history: History, streamed: list[str] | None) -> None:
    """An answer stopped while it streamed stays in the history, marked, so the conversation goes on
    from what the user saw (a plain assistant message: any tool calls it was making are dropped)."""
    text = "".join(streamed or ()).rstrip()
    if text:
        history.append({"role": "assistant", "content": f"{text}\n\n{INTERRUPTED_MARK}"})


def _answer_dangling(history: History) -> None:
    """If an interrupt landed between an assistant message with tool calls and its answers, answer them."""
    if not len(history) or history[-1].get("role") != "assistant":
        return
    calls = history[-1].get("tool_calls") or []
    history.extend({"role": "tool", "tool_call_id": call["id"], "content": NOT_RUN} for call in calls)
