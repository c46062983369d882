"""``sandbox.escalate: ask``: where a person is there to answer, a call the sandbox stopped is offered to
them to run once more without the sandbox, as an exec call. Never without a person (no approver, or
``--yes`` answering for nobody), never for a call the policy denies as such, never twice for one call,
never for a call whose sandbox masked a program a rule denies (unsandboxed, it would run).

The loop offers every finished call to :func:`rerun_hook`'s hook; runners/sandbox/notice.py decides
whether the failure is the sandbox's and words the question; the approver asks it.
"""

from __future__ import annotations

from collections.abc import Sequence

from nami_yaml.agent.hooks import BeforeTool, Decision, Rerun, strictest_opinion
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.policy.approval import ESCALATE_SOURCE, ApprovalRequest, Approver
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.result import ToolResult
from nami_yaml.runners.sandbox.notice import escalation


def rerun_hook(approver: Approver | None, guards: Sequence[BeforeTool], *, person_present: bool) -> Rerun | None:
    """The loop's ``rerun`` hook, or None where nobody could be asked. ``guards``: the policy's opinions
    on the unsandboxed call (an exec call now), so a deny of exec calls is not asked around."""
    if approver is None or not person_present:
        return None

    def rerun(call: PreparedCall, result: ToolResult) -> tuple[PreparedCall, Decision] | None:
        return offer(call, result, approver, guards)

    return rerun


def offer(call: PreparedCall, result: ToolResult, approver: Approver,
          guards: Sequence[BeforeTool]) -> tuple[PreparedToolCall, Decision] | None:
    """Ask whether to rerun ``call`` (which ended with ``result``) unsandboxed: the call to run and the
    person's yes, or None (not the sandbox's doing, escalate is never, the policy denies it, or no)."""
    if not isinstance(call, PreparedToolCall) or "sandbox_failure" not in result.details:
        return None
    plan = call.sandbox_plan()
    if plan is not None and plan.masked:
        # Programs a rule denies were masked in its sandbox: unsandboxed they would run. A deny is never
        # approved around, so such a call is not offered a rerun without the sandbox.
        return None
    found = escalation(plan, result.details, person_present=True)
    if found is None:
        return None
    unsandboxed = call.unsandboxed(found.reason)
    if unsandboxed is None:
        return None
    policy = strictest_opinion(guards, unsandboxed)  # a broken guard fails closed, as in the loop
    if policy is not None and policy.action == "deny":
        return None
    answer = approver(ApprovalRequest(unsandboxed, Decision.ask(found.question, ESCALATE_SOURCE)))
    approved = answer.action == "allow" if isinstance(answer, Decision) else bool(answer)
    return (unsandboxed, Decision.allow(found.reason, "user")) if approved else None

