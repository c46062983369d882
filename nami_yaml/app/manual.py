"""One call made by a person (``nami tools call``): decided by the same policy as the model's calls and
recorded in the same audit log.

The person calling answers what the per-risk defaults would ask (they typed the command), but a rule's
decision stands: a deny refuses, a rule that asks asks them (or ``--yes``).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.app.escalate import offer
from nami_yaml.app.project import Project
from nami_yaml.app.safety import open_audit, project_policy
from nami_yaml.model.types import ToolCall
from nami_yaml.policy.approval import Approver, build_asker
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.result import ToolResult
from nami_yaml.session.store import new_session_id

BY_HAND = "tools call (by hand)"


@dataclass
class ManualOutcome:
    result: ToolResult
    decision: Decision | None  # None when the call was invalid


def call_by_hand(project: Project, name: str, arguments: dict[str, Any], *, approve: Approver | None = None,
                 assume_yes: bool = False, session_id: str | None = None) -> ManualOutcome:
    """Decide, maybe ask, run and record one call. Raises before anything runs when the project is not
    trusted, a rule cannot be used or the audit log cannot be written."""
    policy = project_policy(project)
    audit = open_audit(project, via="tools call", session=session_id or new_session_id())
    call = ToolCall(f"manual-{secrets.token_hex(4)}", name, json.dumps(arguments, ensure_ascii=False))
    prepared = project.executor().prepare(name, arguments)
    if not isinstance(prepared, PreparedToolCall):
        audit.after_tool(CallRecord(call, None, None, prepared))
        return ManualOutcome(prepared, None)
    verdict = policy.decide(prepared)
    decision = verdict.decision
    if decision.action == "ask":
        if not verdict.by_rule:
            decision = Decision.allow(source=BY_HAND)
        else:
            answer = build_asker(approve, assume_yes=assume_yes)(prepared, decision)
            decision = answer if isinstance(answer, Decision) else Decision("allow" if answer else "deny", None, "user")
    if decision.action != "allow":
        why = f" Reason: {decision.reason}." if decision.reason else ""
        result = ToolResult(f"Error: denied by {decision.source or 'policy'}: {prepared.describe()}.{why}", ok=False,
                            details={"denied": True})
        audit.after_tool(CallRecord(call, prepared, decision, result))
        return ManualOutcome(result, decision)
    started = time.time()
    result = prepared.run()
    rerun = None if approve is None or assume_yes else offer(prepared, result, approve, [policy])
    if rerun is not None:  # the sandbox stopped it, and the person said yes to once without it
        first, (prepared, decision) = result, rerun
        started = time.time()
        result = prepared.run()
        result.details["escalated"] = {"source": decision.source, "reason": decision.reason,
                                       "first": {k: first.details[k] for k in ("exit_code", "sandbox_failure")
                                                 if k in first.details}}
    audit.after_tool(CallRecord(call, prepared, decision, result, started, round(time.time() - started, 3)))
    if audit.failure:
        result.content += f"\n[nami: the audit log {audit.path} could not be written: {audit.failure}]"
        result.ok = False
    return ManualOutcome(result, decision)
