"""The tool half of a step: decide on every call, run them (reads in parallel), answer each in order."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures import TimeoutError as FutureTimeout  # TimeoutError itself from Python 3.11
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from nami_yaml.agent.events import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    ToolCallEvent,
    ToolDecided,
    ToolProgress,
    ToolResultEvent,
)
from nami_yaml.agent.history import History
from nami_yaml.agent.hooks import CallRecord, Decision, Hooks, ResultNote, answer, strictest_opinion
from nami_yaml.agent.toolbox import READ, PreparedCall, Toolbox
from nami_yaml.cancel import CancelToken, cancel_on_interrupt
from nami_yaml.model.types import AssistantTurn, ToolCall
from nami_yaml.result import ToolResult, escalation
from nami_yaml.setting_defaults import LIMITS

CUT_OFF = (
    "Error: Not run: your response was cut off (finish_reason: length) before this tool call was complete. "
    "Retry with shorter output, for example by splitting large content over several smaller calls."
)
NOT_RUN = "Error: Not run: the user interrupted the run before this call started."
TOO_MANY = ("Error: Not run: your response made {made} tool calls, more than the {limit} one response may make "
            "(limits.max_tool_calls_per_turn); the first {limit} were handled. Make the calls that are still "
            "needed in a later response.")
INTERRUPTED = "Error: Interrupted by the user while this call was running."
ABANDONED = "Error: Interrupted by the user; the call did not stop in time, so its outcome is unknown."
STOPPED = "(nothing: a second Ctrl-C stopped it where it was, so its outcome is unknown)"
RETRY_HINT = "Do not retry the same call; ask the user or try another way."

_POLL = 0.2  # seconds between checks of the cancel switch while tools run

# A running call: its result, and whether it was cancelled when it came back.
_Pending = Future[tuple[ToolResult, bool]]
_T = TypeVar("_T")


class Interrupted(Exception):
    """The run was cancelled by someone other than our own KeyboardInterrupt handler."""


@dataclass
class _Slot:
    """One tool call of a turn, from request to result."""

    call: ToolCall
    prepared: PreparedCall | None
    result: ToolResult | None = None
    decision: Decision | None = None
    asked: Decision | None = None  # the hooks' ask, when ``decision`` is the answer to it
    started: float | None = None
    reported: bool = False  # a tool_result event went out
    parallel: bool = False  # a read that needed nobody's approval: runs side by side with other such reads
    first: ToolResult | None = None  # the result a rerun replaces (hooks.rerun), once per call


class ToolPhase:
    def __init__(self, toolbox: Toolbox, hooks: Hooks, emit: Callable[[Event], None], cancel: CancelToken, *,
                 max_parallel: int, interrupt_grace: float,
                 max_calls: int = LIMITS["max_tool_calls_per_turn"]):
        self.toolbox = toolbox
        self.hooks = hooks
        self.emit = emit
        self.cancel = cancel
        self.limit = max(1, max_parallel)
        self.interrupt_grace = interrupt_grace
        self.max_calls = max(1, max_calls)

    def run(self, turn: AssistantTurn, history: History) -> bool:
        """Answer every call of ``turn`` with one tool message, in call order. False if interrupted."""
        calls, limit = turn.tool_calls, self.max_calls
        slots = [self._prepare(call) for call in calls[:limit]]
        if len(calls) > limit:
            # Past the limit, calls are answered without being looked at: one response cannot run thousands.
            over = ToolResult(TOO_MANY.format(made=len(calls), limit=limit), ok=False,
                              details={"not_run": "too_many_calls"})
            slots += (_Slot(call, None, over) for call in calls[limit:])
        for slot in slots:
            arguments = slot.prepared.arguments if slot.prepared is not None else slot.call.arguments
            self.emit(ToolCallEvent(slot.call.id, slot.call.name, arguments, _describe(slot)))
        completed = True
        if turn.finish_reason == "length":
            # Arguments of a cut-off response may be truncated mid-value; running them could do harm.
            for slot in slots:
                slot.result = ToolResult(CUT_OFF, ok=False, details={"not_run": "cut_off"})
                self._report(slot)
        else:
            completed = self._execute(slots)
        # One extend, so an interrupt can never leave half of the answers in the history.
        history.extend(
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

    # -- deciding -------------------------------------------------------------------------------------

    def _decide(self, slot: _Slot) -> Decision:
        """The before_tool hooks' strictest opinion; with none, reads run and everything else asks."""
        assert slot.prepared is not None
        decided = strictest_opinion(self.hooks.before_tool, slot.prepared)
        if decided is None:
            decided = Decision.allow() if slot.prepared.risk == READ else Decision.ask()
        return decided

    def _approved(self, slot: _Slot) -> bool:
        """Settle an ``ask`` or ``deny`` before the call starts; a refusal becomes the call's result."""
        assert slot.prepared is not None and slot.decision is not None
        extra: dict[str, Any] = {}
        asked = slot.decision.action == "ask"
        if asked:
            slot.asked = slot.decision
            slot.decision, extra = answer(self.hooks.ask, slot.prepared, slot.decision)
        decision = slot.decision
        approved = decision.action == "allow"
        self.emit(_decided(slot))
        if approved and not asked and slot.prepared.risk == READ:
            return True  # a read that runs as reads do: nothing worth reporting
        self.emit(ApprovalEvent(slot.call.id, slot.call.name, approved, decision.reason, decision.source))
        if not approved:
            slot.result = ToolResult(_refusal(decision, _describe(slot)), ok=False,
                                     details={"denied": True, **_decision_details(decision), **extra})
        return approved

    # -- running --------------------------------------------------------------------------------------

    def _execute(self, slots: list[_Slot]) -> bool:
        """Run the calls: consecutive allowed reads in parallel, everything else alone after everything
        before it (so a read that follows a write sees the write). Approval is asked on this thread."""
        running: dict[_Pending, _Slot] = {}
        i = 0
        try:
            while i < len(slots) or running:
                if self.cancel.is_set():
                    raise Interrupted
                while i < len(slots):
                    if self.cancel.is_set():  # (a call that ran on this thread may have been interrupted)
                        raise Interrupted
                    slot = slots[i]
                    if slot.prepared is None:  # already answered by prepare()
                        self._report(slot)
                        i += 1
                        continue
                    if running and any(not s.parallel for s in running.values()):
                        break  # decided only once what runs alone is answered: its after_tool hooks first
                    if slot.decision is None:
                        slot.decision = self._decide(slot)
                        slot.parallel = slot.prepared.risk == READ and slot.decision.action == "allow"
                    if slot.parallel:
                        if len(running) >= self.limit:  # (what runs is reads only: see above)
                            break
                    elif running:
                        break
                    if not self._approved(slot):
                        self._report(slot)
                    # Alone (nothing running, nothing to start beside it), it may run on this thread.
                    elif not running and (not slot.parallel or i == len(slots) - 1) and self._ran_here(slot):
                        self._finish(slot, running)
                    else:
                        self._start(slot, running)
                    i += 1
                if running:
                    for fut in _first_done(running):
                        slot = running.pop(fut)
                        slot.result = _collect(fut)
                        self._finish(slot, running)
        except (KeyboardInterrupt, Interrupted):
            self._interrupt(slots, running)
            return False
        return True

    def _rerun(self, slot: _Slot, running: dict[_Pending, _Slot]) -> bool:
        """Start the call the rerun hook offers in place of a finished one (once per call); True if started.
        Its result, when it comes, is the call's; the first is kept in its details."""
        if slot.first is not None:
            assert slot.result is not None
            decision = slot.decision
            slot.result.details["escalated"] = escalation(decision.source if decision else None,
                                                          decision.reason if decision else None, slot.first)
            reason = decision.reason if decision and decision.reason else "rerun, approved"
            slot.result.content += f"\n[{reason}]"  # the model learns why it worked this time, and that it was once
            return False
        result = slot.result
        if self.hooks.rerun is None or slot.prepared is None or result is None or self.cancel.is_set() \
                or result.details.get("interrupted"):
            return False
        try:
            offer = self.hooks.rerun(slot.prepared, result)
        except Exception as exc:  # a broken hook keeps the result the call has
            self.emit(ErrorEvent(f"offering to rerun {slot.call.name} failed: {type(exc).__name__}: {exc}"))
            return False
        if offer is None:
            return False
        slot.first, (slot.prepared, slot.decision) = result, offer
        slot.parallel = False  # unsandboxed now: nothing new starts beside it
        self.emit(ApprovalEvent(slot.call.id, slot.call.name, True, slot.decision.reason, slot.decision.source))
        self.emit(_decided(slot))
        self._start(slot, running)
        return True

    def _finish(self, slot: _Slot, running: dict[_Pending, _Slot]) -> None:
        """A call has its result: report it, unless the rerun hook starts it again."""
        if not self._rerun(slot, running):
            self._report(slot)

    def _ran_here(self, slot: _Slot) -> bool:
        """Run a call that stops when cancelled (a process it kills) on this thread, if it can be: handing it
        to a worker and waiting for it cost two thread wake-ups per call, and a future and a wait for it more
        (bench/: per step). Ctrl-C then cancels it, as it cancels a call on a worker. False: not run."""
        prepared = slot.prepared
        if prepared is None or not getattr(prepared, "stops_when_cancelled", False):
            return False
        with cancel_on_interrupt(self.cancel) as able:
            if not able:
                return False
            self._follow_progress(slot)
            slot.started = time.time()
            slot.result = _settled(_work(prepared, self.cancel))
        return True

    def _start(self, slot: _Slot, running: dict[_Pending, _Slot]) -> None:
        prepared = slot.prepared
        assert prepared is not None
        fut: _Pending = Future()
        fut.set_running_or_notify_cancel()
        running[fut] = slot
        self._follow_progress(slot)
        slot.started = time.time()
        cancel = self.cancel
        _WORKERS.run(lambda: _work(prepared, cancel), fut.set_result, f"nami-tool-{prepared.name}")

    def _follow_progress(self, slot: _Slot) -> None:
        """What the call says of its progress, while it runs, as events (the status line shows them)."""
        progress = getattr(slot.prepared, "progress", None)  # optional: a PreparedCall may have none
        if progress is not None:
            call_id, name = slot.call.id, slot.call.name
            progress.connect(lambda message: self.emit(ToolProgress(call_id, name, message)))

    def _interrupt(self, slots: list[_Slot], running: dict[_Pending, _Slot]) -> None:
        """Stop everything, wait a bounded time for running tools, and give every call a result."""
        self.cancel.set()
        for slot in running.values():
            if slot.prepared is not None:
                slot.prepared.cancel()
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
                    self._report(slot)
        except KeyboardInterrupt:
            pass

    def _report(self, slot: _Slot) -> None:
        """The after_tool hooks (audit, change watch), then the tool_result event: what they recorded (the
        audit record's hash) goes out with it, to subscribers (telemetry, ``--json``)."""
        assert slot.result is not None
        slot.reported = True
        duration = None if slot.started is None else round(time.time() - slot.started, 3)
        record = CallRecord(slot.call, slot.prepared, slot.decision, slot.result, slot.started, duration, slot.asked)
        notes = [note for note in (_note(hook, record) for hook in self.hooks.result_notes) if note]
        if notes:
            record.result = slot.result = replace(slot.result, content="\n\n".join([slot.result.content, *notes]))
        for hook in self.hooks.after_tool:
            hook(record)
        r = slot.result
        self.emit(ToolResultEvent(slot.call.id, slot.call.name, r.ok, r.content, r.details))


class _Workers:
    """The threads tool calls run on: daemon threads, which (unlike ThreadPoolExecutor workers) cannot
    keep the process alive after Ctrl-C if a tool ignores the cancel switch. A thread that finished a call
    waits for the next one, as starting a thread for every call cost more than handing a call to one that
    waits (bench/: per step); a call that never returns keeps its thread, and the next call gets another."""

    def __init__(self) -> None:
        self._forget()
        self.started = 0  # threads started so far

    def run(self, work: Callable[[], _T], deliver: Callable[[_T], None], name: str) -> None:
        """``deliver(work())`` on a thread of its own."""
        with self._lock:
            reuse = self._idle > 0
            self._idle -= reuse
            self.started += not reuse
        self._jobs.put((work, deliver, name))
        if not reuse:
            threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            work, deliver, name = self._jobs.get()
            threading.current_thread().name = name
            value = work()  # never raises: it makes a result of any failure
            # Idle before the result is delivered: the next call, which may follow at once, comes here.
            with self._lock:
                self._idle += 1
            deliver(value)

    def _forget(self) -> None:
        """No thread waits yet (and in a forked child, none came along)."""
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[Any], None], str]] = queue.SimpleQueue()
        self._idle = 0


_WORKERS = _Workers()
os.register_at_fork(after_in_child=_WORKERS._forget)


def _note(hook: ResultNote, record: CallRecord) -> str | None:
    try:
        return hook(record)
    except Exception:  # a note is extra text; a hook that fails adds none (the app's hooks report their own)
        return None


def _work(prepared: PreparedCall, cancel: CancelToken) -> tuple[ToolResult, bool]:
    """Run the call: its result, never an exception, and whether the run was cancelled when it came back."""
    try:
        result = prepared.run()
    except KeyboardInterrupt:  # only where it runs on the loop's thread: a second Ctrl-C, or SIGTERM
        cancel.set()
        result = ToolResult(STOPPED, ok=False, details={"interrupted": True})
    except BaseException as exc:  # run() must not raise; if it does, the model still gets an answer
        result = ToolResult.error(f"{prepared.name} failed unexpectedly: {type(exc).__name__}: {exc}")
    # A result that arrives after cancel was set is most likely the runner reporting the kill.
    return result, cancel.is_set()


def _first_done(running: dict[_Pending, _Slot]) -> list[_Pending]:
    """The running calls that finished, after waiting up to _POLL seconds for the first. One call (what a
    Python tool inside nami is, most often) is waited for on its own future: concurrent.futures.wait()
    builds a waiter and locks every future twice, and the longer the loop's thread runs Python after
    handing the call over, the likelier the worker, woken, finds the interpreter lock still held and must
    be woken once more (bench/: a step with a tool inside nami)."""
    if len(running) == 1:
        [fut] = running
        try:
            fut.result(timeout=_POLL)  # never raises but on time-out: _work makes a result of any failure
        except FutureTimeout:
            return []
        return [fut]
    done, _ = wait(list(running), timeout=_POLL, return_when=FIRST_COMPLETED)
    return list(done)


def _collect(fut: _Pending) -> ToolResult:
    return _settled(fut.result())


def _settled(outcome: tuple[ToolResult, bool]) -> ToolResult:
    result, cancelled = outcome
    if not cancelled:
        return result
    # Keep what the tool said: for a half-done deploy, its partial output is what the model needs most.
    return ToolResult(
        f"{INTERRUPTED} What it returned:\n{result.content}",
        ok=False,
        details={**result.details, "interrupted": True},
    )


def _refusal(decision: Decision, described: str) -> str:
    if decision.source == "user":
        said = f" The user said: {decision.reason}." if decision.reason else ""
        return f"Denied by the user: {described}.{said} {RETRY_HINT}"
    by = decision.source or "policy"
    why = f" Reason: {decision.reason}." if decision.reason else ""
    return f"Denied by {by}: {described}.{why} {RETRY_HINT}"


def _decision_details(decision: Decision) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if decision.reason:
        details["reason"] = decision.reason
    if decision.source and decision.source != "user":
        details["source"] = decision.source
    return details


def _decided(slot: _Slot) -> ToolDecided:
    """The tracers' event for a decided call. Target, sandbox and trace carrier are what a prepared call may
    offer beyond the protocol (the registry's calls do); another toolbox's calls simply have none."""
    prepared, decision = slot.prepared, slot.decision
    assert prepared is not None and decision is not None
    plan = getattr(prepared, "sandbox_plan", None)
    sandbox = plan() if plan is not None else None
    return ToolDecided(slot.call.id, slot.call.name, decision.action, decision.source, prepared.risk, prepared.kind,
                       getattr(prepared, "target", None), None if sandbox is None else bool(sandbox.active),
                       getattr(prepared, "trace", None))


def _describe(slot: _Slot) -> str:
    if slot.prepared is None:
        raw = slot.call.arguments
        return f"{slot.call.name} {raw[:200]}{'...' if len(raw) > 200 else ''}"
    try:
        return slot.prepared.describe()
    except Exception:
        return slot.call.name
