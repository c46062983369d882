"""One call made by a person (``nami tools call``): decided by the guards of the model's calls and recorded
in the same audit log; only the fallback differs (see :class:`nami_yaml.app.guards.Guards`, ``by_hand``).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.app.guards import Asking, Guards
from nami_yaml.app.project import Project
from nami_yaml.model.types import ToolCall
from nami_yaml.policy.approval import Approver
from nami_yaml.policy.permissions import BY_HAND
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.result import ToolResult, escalation


@dataclass
class ManualOutcome:
    result: ToolResult
    decision: Decision | None  # None when the call was invalid


def by_hand_guards(project: Project, approve: Approver | None = None, *, assume_yes: bool = False,
                   dry_run: bool = False) -> Guards:
    """The guards of calls a person makes: the model's, with the by-hand fallback; ``approve`` asks them."""
    return Guards(project, Asking(approve, assume_yes), via="tools call", dry_run=dry_run, by_hand=True)


def call_by_hand(executor: Executor, guards: Guards, name: str, arguments: dict[str, Any]) -> ManualOutcome:
    """Validate, decide (maybe asking), run and record one call. Never raises for the tool's failures."""
    call = ToolCall(f"manual-{secrets.token_hex(4)}", name, json.dumps(arguments, ensure_ascii=False))
    prepared = executor.prepare(name, arguments)
    if not isinstance(prepared, PreparedToolCall):
        guards.record(CallRecord(call, None, None, prepared))
        return ManualOutcome(prepared, None)
    decision, asked = guards.settle(prepared)
    if decision.action != "allow":
        why = f" Reason: {decision.reason}." if decision.reason else ""
        result = ToolResult(f"Error: denied by {decision.source or 'policy'}: {prepared.describe()}.{why}", ok=False,
                            details={"denied": True})
        guards.record(CallRecord(call, prepared, decision, result, asked=asked))
        return ManualOutcome(result, decision)
    started = time.time()
    result = prepared.run()
    rerun = guards.rerun(prepared, result)
    if rerun is not None:  # the sandbox stopped it, and the person said yes to once without it
        first, (again, decision) = result, rerun
        assert isinstance(again, PreparedToolCall)
        prepared, started = again, time.time()
        result = prepared.run()
        result.details["escalated"] = escalation(decision.source, decision.reason, first)
    guards.record(CallRecord(call, prepared, decision, result, started, round(time.time() - started, 3), asked))
    audit = guards.audit
    if audit is not None and audit.failure:
        result.content += f"\n[nami: the audit log {audit.path} could not be written: {audit.failure}]"
        result.ok = False
    return ManualOutcome(result, decision)


def would_decide(project: Project, prepared: PreparedToolCall) -> str:
    """What the guards would decide for this call by hand, in one line (``tools call --dry-run``)."""
    if not project.is_trusted():
        return "not evaluated (this agent.yaml is not trusted, so its rules and permissions are not read)"
    decision = by_hand_guards(project, dry_run=True).decide(prepared)
    if decision.source == BY_HAND:
        return f"allow ({decision.reason})"
    by = decision.source or f"permissions.{prepared.risk}"
    why = f": {decision.reason}" if decision.reason else ""
    if decision.action == "ask":
        return f"ask ({by} asks{why}; you would be asked, or --yes)"
    return f"{decision.action} by {by}{why}"
