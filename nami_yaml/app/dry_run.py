"""``--dry-run``: the model works as usual, the policy decides as usual, and no tool runs (reads
included). Each call's result says it was not executed and shows what would have run; the run ends with
the list of every call and what would have happened to it (a ``dry_run`` event just before ``final``)."""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from typing import Any

from nami_yaml.agent.events import DryRunEvent, Event, FinalEvent, ToolCallEvent
from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.agent.toolbox import PreparedCall, Toolbox
from nami_yaml.display import command_line
from nami_yaml.result import ToolResult

NOT_EXECUTED = "dry run: not executed"


class DryRunCall:
    """A prepared call whose ``run`` only says what it would have run."""

    def __init__(self, inner: PreparedCall):
        self.inner = inner
        self.name = inner.name
        self.arguments = inner.arguments
        self.risk = inner.risk
        self.kind = inner.kind
        # Why the risk is higher than the tool's (a write that runs code): the guards decide on it.
        self.risk_reason: str | None = getattr(inner, "risk_reason", None)
        self.would_ask: Decision | None = None  # set when the policy asked: nobody is asked in a dry run

    def describe(self) -> str:
        return self.inner.describe()

    def plan(self) -> dict[str, Any]:
        return self.inner.plan()

    def cancel(self) -> None:
        self.inner.cancel()

    def entry_details(self, result: ToolResult) -> dict[str, Any]:
        """More of the call for its entry in the list (a replay's: what was served)."""
        return {}

    def run(self) -> ToolResult:
        shown = rendered(self.inner)
        planned = would_plan(self.inner, asked=self.would_ask is not None)
        first = f" {planned} first (its output shown in the question), then" if planned else ""
        return ToolResult(f"{NOT_EXECUTED}. It would{first} run: {shown}", ok=True,
                          details={"dry_run": True, "would_run": shown,
                                   **({"would_plan": planned} if planned else {})})


class DryRunToolbox:
    def __init__(self, inner: Toolbox):
        self.inner = inner

    def definitions(self) -> list[dict[str, Any]]:
        return self.inner.definitions()

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall | ToolResult:
        prepared = self.inner.prepare(name, raw_arguments)
        return prepared if isinstance(prepared, ToolResult) else DryRunCall(prepared)


class DryRun:
    """Collects what each call of a run would have done, and hands the list out before ``final``."""

    def __init__(self, asked: Callable[[PreparedCall], str | None] | None = None,
                 serve: Callable[[Toolbox], Toolbox] | None = None) -> None:
        self.asked = asked  # who would be asked (the approvals queue and how many approvers), where it says
        self.serve = serve  # a replay's toolbox maker (app/replay.py): recorded results instead of the message
        self.calls: list[dict[str, Any]] = []
        self._order: dict[str, int] = {}  # call id -> its place in the run (reads may finish out of order)
        self._lock = threading.Lock()

    def toolbox(self, inner: Toolbox) -> Toolbox:
        return self.serve(inner) if self.serve is not None else DryRunToolbox(inner)

    def ask(self, call: PreparedCall, pending: Decision) -> Decision:
        """The ask hook: nobody is asked; the call is noted as one that would need a yes."""
        if isinstance(call, DryRunCall):
            call.would_ask = pending
        return Decision.allow(pending.reason, "dry run")

    def record(self, record: CallRecord) -> None:
        """The after_tool hook."""
        entry: dict[str, Any] = {"id": record.call.id, "tool": record.call.name}
        prepared, decision = record.prepared, record.decision
        if prepared is None:
            entry.update(outcome="invalid", detail=record.result.content)
        elif decision is not None and decision.action == "deny":
            entry.update(outcome="denied", command=rendered(prepared), by=decision.source, detail=decision.reason)
        elif record.started is None:
            entry.update(outcome="not run", command=rendered(prepared), detail=record.result.content)
        elif isinstance(prepared, DryRunCall) and prepared.would_ask is not None:
            asked = prepared.would_ask
            entry.update(outcome="would ask", command=rendered(prepared), by=asked.source, detail=asked.reason)
            who = self.asked(prepared.inner) if self.asked is not None else None
            if who:
                entry["asked"] = who
        else:
            entry.update(outcome=getattr(prepared, "outcome", "would run"), command=rendered(prepared),
                         by=decision.source if decision else None)
        if isinstance(prepared, DryRunCall) and entry["outcome"] in ("would ask", "would run"):
            planned = would_plan(prepared.inner, asked=prepared.would_ask is not None)
            if planned:
                entry["would_plan"] = planned
        if prepared is not None:
            entry["plan"] = _safe_plan(prepared)
        if isinstance(prepared, DryRunCall):
            entry.update(prepared.entry_details(record.result))
        with self._lock:
            self.calls.append(entry)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            calls, self.calls = self.calls, []
            order, self._order = self._order, {}
        return sorted(calls, key=lambda entry: order.get(entry["id"], len(order)))

    def events(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        """``emit`` with the list of calls sent just before each ``final`` event."""

        def forward(event: Event) -> None:
            if isinstance(event, ToolCallEvent):
                with self._lock:
                    self._order.setdefault(event.id, len(self._order))
            elif isinstance(event, FinalEvent):
                emit(DryRunEvent(self.take()))
            emit(event)

        return forward


def rendered(call: PreparedCall) -> str:
    """The command line (argv, or a pipeline's stages, and folder) for a process, else the call as
    ``describe()`` shows it."""
    try:
        plan = call.plan()
    except Exception:
        return call.describe()
    if "argv" in plan and call.kind in ("command", "pipeline"):
        return f"{command_line(plan)} (in {plan['cwd']})"
    if "argv" in plan:
        return f"{call.describe()} (in {plan['cwd']})"
    return call.describe()


def would_plan(call: PreparedCall, *, asked: bool) -> str | None:
    """"would run plan …" for a call of a tool with ``plan:`` whose plan step would run: where it is asked
    about, or where its command reads the plan file. Nothing is run to say it."""
    step = (_safe_plan(call) or {}).get("plan_step")
    if not isinstance(step, dict) or not (asked or step.get("needed")):
        return None
    show = f", then {shlex.join(step['show'])}" if step.get("show") else ""
    return f"would run plan {shlex.join(step['argv'])}{show}"


def _safe_plan(call: PreparedCall) -> dict[str, Any] | None:
    try:
        return call.plan()
    except Exception:
        return None
