"""The agent loop: ask the model, run the tools it calls, feed the results back, until it answers.

It knows a Model and a Toolbox (both protocols) and nothing about YAML, config or the CLI. History is
append-only and the tool list is fetched once per run, so every request starts with the exact bytes of the
previous one (provider prompt caches hit).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any, Literal

from nami_yaml.agent.events import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
    usage_dict,
)
from nami_yaml.agent.toolbox import READ, PreparedCall, Toolbox
from nami_yaml.model.types import AssistantTurn, Model, ModelError, ToolCall, Usage
from nami_yaml.result import ToolResult

Status = Literal["answered", "max_steps", "interrupted", "error"]

CUT_OFF = (
    "Error: Not run: your response was cut off (finish_reason: length) before this tool call was complete. "
    "Retry with shorter output, for example by splitting large content over several smaller calls."
)
ANSWER_CUT_OFF = "The answer was cut off at the model's output limit (finish_reason: length)."
NOT_RUN = "Error: Not run: the user interrupted the run before this call started."
INTERRUPTED = "Error: Interrupted by the user while this call was running."
ABANDONED = "Error: Interrupted by the user; the call did not stop in time, so its outcome is unknown."
INTERRUPTED_RUN = "Interrupted by the user."

_POLL = 0.2  # seconds between checks of the cancel event while tools run

# A running call: its result, and whether the cancel switch was on when it came back.
_Pending = Future[tuple[ToolResult, bool]]


@dataclass
class RunOutcome:
    status: Status
    final_text: str | None
    error: str | None  # why the run stopped; for "answered", a note (the answer was cut off)
    usage: Usage
    steps: int


@dataclass
class _Slot:
    """One tool call of a turn, from request to result."""

    call: ToolCall
    prepared: PreparedCall | None
    result: ToolResult | None = None
    reported: bool = False  # a tool_result event went out

    @property
    def is_read(self) -> bool:
        return self.prepared is not None and self.prepared.risk == READ


class _Interrupted(Exception):
    """The cancel event was set by someone other than our own KeyboardInterrupt handler."""


@dataclass
class AgentLoop:
    model: Model
    toolbox: Toolbox
    approve: Callable[[PreparedCall], bool]
    max_steps: int = 50
    max_parallel_tools: int = 4
    cancel: threading.Event = field(default_factory=threading.Event)
    on_event: Callable[[Event], None] | None = None
    # After Ctrl-C, how long to wait for running tools to die before giving up on them.
    interrupt_grace: float = 10.0

    def run(self, messages: list[dict[str, Any]]) -> RunOutcome:
        """Extend ``messages`` in place until the model answers or the run stops; never raises for
        model, tool or interrupt failures (the outcome says what happened)."""
        self.cancel.clear()
        tools = self.toolbox.definitions()
        usage = Usage()
        steps = 0
        try:
            while steps < self.max_steps:
                if self.cancel.is_set():
                    return self._finish("interrupted", None, INTERRUPTED_RUN, usage, steps)
                try:
                    turn = self.model.complete(messages, tools, on_text=self._on_text)
                except ModelError as exc:
                    self._emit(ErrorEvent(str(exc)))
                    return self._finish("error", None, str(exc), usage, steps)
                steps += 1
                if turn.usage is not None:
                    usage.add(turn.usage)
                messages.append(turn.to_message())
                if turn.usage is not None:
                    self._emit(UsageEvent(**usage_dict(turn.usage)))
                if turn.content:
                    self._emit(MessageEvent(turn.content))
                if not turn.tool_calls:
                    note = ANSWER_CUT_OFF if turn.finish_reason == "length" else None
                    return self._finish("answered", turn.content, note, usage, steps)
                if not self._tool_phase(turn, messages):
                    return self._finish("interrupted", None, INTERRUPTED_RUN, usage, steps)
        except KeyboardInterrupt:
            self.cancel.set()
            _answer_dangling(messages)
            return self._finish("interrupted", None, INTERRUPTED_RUN, usage, steps)
        message = (
            f"Stopped after {self.max_steps} steps without a final answer (max_steps reached). "
            "Continue the conversation to let the agent go on, or raise the step limit."
        )
        return self._finish("max_steps", None, message, usage, steps)

    # -- events -------------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _on_text(self, text: str) -> None:
        self._emit(TextDelta(text))

    def _finish(
        self, status: Status, text: str | None, error: str | None, usage: Usage, steps: int
    ) -> RunOutcome:
        self._emit(FinalEvent(text=text, status=status, usage=usage_dict(usage), error=error))
        return RunOutcome(status=status, final_text=text, error=error, usage=usage, steps=steps)

    def _emit_result(self, slot: _Slot) -> None:
        assert slot.result is not None
        r = slot.result
        slot.reported = True
        self._emit(ToolResultEvent(slot.call.id, slot.call.name, r.ok, r.content, r.details))

    # -- tools --------------------------------------------------------------------------------------

    def _tool_phase(self, turn: AssistantTurn, messages: list[dict[str, Any]]) -> bool:
        """Answer every call of ``turn`` with one tool message, in call order. False if interrupted."""
        slots = [self._prepare(call) for call in turn.tool_calls]
        for slot in slots:
            self._emit(ToolCallEvent(
                slot.call.id,
                slot.call.name,
                slot.prepared.arguments if slot.prepared is not None else slot.call.arguments,
                _describe(slot),
            ))
        completed = True
        if turn.finish_reason == "length":
            # Arguments of a cut-off response may be truncated mid-value; running them could do harm.
            for slot in slots:
                slot.result = ToolResult(CUT_OFF, ok=False, details={"not_run": "cut_off"})
                self._emit_result(slot)
        else:
            completed = self._execute(slots)
        # One extend, so an interrupt can never leave half of the answers in the history.
        messages.extend(
            {"role": "tool", "tool_call_id": s.call.id, "content": s.result.content if s.result else NOT_RUN}
            for s in slots
        )
        return completed

    def _prepare(self, call: ToolCall) -> _Slot:
        try:
            prepared = self.toolbox.prepare(call.name, call.arguments)
        except Exception as exc:  # a toolbox bug must not break the transcript
            return _Slot(call, None, ToolResult.error(f"could not prepare {call.name}: {exc}"))
        if isinstance(prepared, ToolResult):
            return _Slot(call, None, prepared)
        return _Slot(call, prepared)

    def _execute(self, slots: list[_Slot]) -> bool:
        """Run the prepared calls: consecutive reads in parallel, each write/exec alone after everything
        before it (so a read that follows a write sees the write). Approval is asked on this thread."""
        running: dict[_Pending, _Slot] = {}
        limit = max(1, self.max_parallel_tools)
        i = 0
        try:
            while i < len(slots) or running:
                if self.cancel.is_set():
                    raise _Interrupted
                while i < len(slots):
                    slot = slots[i]
                    if slot.prepared is None:  # already answered by prepare()
                        self._emit_result(slot)
                    elif slot.is_read:
                        if len(running) >= limit or any(not s.is_read for s in running.values()):
                            break
                        self._start(slot, running)
                    else:
                        if running:
                            break
                        if self._approved(slot):
                            self._start(slot, running)
                        else:
                            self._emit_result(slot)
                    i += 1
                if running:
                    done, _ = wait(list(running), timeout=_POLL, return_when=FIRST_COMPLETED)
                    for fut in done:
                        slot = running.pop(fut)
                        slot.result = _collect(fut)
                        self._emit_result(slot)
        except (KeyboardInterrupt, _Interrupted):
            self._interrupt(slots, running)
            return False
        return True

    def _approved(self, slot: _Slot) -> bool:
        assert slot.prepared is not None
        try:
            approved = bool(self.approve(slot.prepared))
            reason: dict[str, Any] = {"denied": True}
        except Exception as exc:  # an approval that cannot be asked is a "no"
            approved = False
            reason = {"denied": True, "approval_error": f"{type(exc).__name__}: {exc}"}
        self._emit(ApprovalEvent(slot.call.id, slot.call.name, approved))
        if not approved:
            slot.result = ToolResult(
                f"Denied by the user: {_describe(slot)}. "
                "Do not retry the same call; ask the user or try another way.",
                ok=False,
                details=reason,
            )
        return approved

    def _start(self, slot: _Slot, running: dict[_Pending, _Slot]) -> None:
        prepared = slot.prepared
        assert prepared is not None
        fut: _Pending = Future()
        fut.set_running_or_notify_cancel()
        running[fut] = slot

        def work() -> None:
            try:
                result = prepared.run()
            except BaseException as exc:  # run() must not raise; if it does, the model still gets an answer
                result = ToolResult.error(f"{prepared.name} failed unexpectedly: {type(exc).__name__}: {exc}")
            # A result that arrives after cancel was set is most likely the runner reporting the kill.
            fut.set_result((result, self.cancel.is_set()))

        # Daemon threads, unlike ThreadPoolExecutor workers, cannot keep the process alive after Ctrl-C
        # if a tool ignores the cancel event.
        threading.Thread(target=work, name=f"nami-tool-{prepared.name}", daemon=True).start()

    def _interrupt(self, slots: list[_Slot], running: dict[_Pending, _Slot]) -> None:
        """Stop everything, wait a bounded time for running tools, and give every call a result."""
        self.cancel.set()
        deadline = time.monotonic() + self.interrupt_grace
        try:
            while running and time.monotonic() < deadline:
                for fut in [f for f in running if f.done()]:
                    running.pop(fut).result = _collect(fut)
                wait(list(running), timeout=min(_POLL, max(0.0, deadline - time.monotonic())))
            for fut in [f for f in running if f.done()]:
                running.pop(fut).result = _collect(fut)
        except KeyboardInterrupt:
            pass  # a second Ctrl-C: stop waiting
        for slot in running.values():
            slot.result = ToolResult(ABANDONED, ok=False, details={"interrupted": True})
        for slot in slots:
            if slot.result is None:
                slot.result = ToolResult(NOT_RUN, ok=False, details={"interrupted": True, "not_run": True})
        # Events go out in call order after the fact; emitting earlier could itself be interrupted.
        try:
            for slot in slots:
                if not slot.reported:
                    self._emit_result(slot)
        except KeyboardInterrupt:
            pass


def _collect(fut: _Pending) -> ToolResult:
    result, cancelled = fut.result()
    if not cancelled:
        return result
    # Keep what the tool said: for a half-done deploy, its partial output is what the model needs most.
    return ToolResult(
        f"{INTERRUPTED} What it returned:\n{result.content}",
        ok=False,
        details={**result.details, "interrupted": True},
    )


def _describe(slot: _Slot) -> str:
    if slot.prepared is None:
        raw = slot.call.arguments
        return f"{slot.call.name} {raw[:200]}{'...' if len(raw) > 200 else ''}"
    try:
        return slot.prepared.describe()
    except Exception:
        return slot.call.name


def _answer_dangling(messages: list[dict[str, Any]]) -> None:
    """If an interrupt landed between an assistant message with tool calls and its answers, answer them."""
    if not messages or messages[-1].get("role") != "assistant":
        return
    for call in messages[-1].get("tool_calls") or []:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": NOT_RUN})
