"""What an approver is asked, and how answers are found before anyone is asked: calls approved earlier in
the session, ``--approve RISK,…`` and ``--yes``."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import NOBODY_TO_ASK, Asker, Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.policy.session import SessionApprovals

SESSION_SOURCE = "user (for this session)"
# Who asks when a person is offered to rerun a call the sandbox stopped, unsandboxed (app/escalate.py).
ESCALATE_SOURCE = "sandbox.escalate"


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that needs a yes or no, and why it was not simply allowed."""

    call: PreparedCall
    pending: Decision  # the "ask" decision: its source says which setting or rule asks, its reason why
    session: SessionApprovals | None = None
    agent: str | None = None  # the named sub-agent that makes the call (None: the agent the person runs)
    # An answer given elsewhere meanwhile (the approvals queue), polled by an approver that waits on a person
    # (the terminal): a Decision ends its question, None means none yet.
    elsewhere: Callable[[], Decision | None] | None = None

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def risk(self) -> str:
        return self.call.risk

    @property
    def arguments(self) -> dict[str, Any]:
        return self.call.arguments

    def describe(self) -> str:
        return self.call.describe()

    def plan(self) -> dict[str, Any]:
        return self.call.plan()

    def approve_for_session(self) -> Decision:
        """Yes, and yes again without asking to this tool with these same argument values."""
        if self.session is not None:
            self.session.remember(self.call)
        return Decision.allow(source=SESSION_SOURCE)


Approver = Callable[[ApprovalRequest], "Decision | bool"]
"""Returns True/False (the user's yes or no) or a Decision (to give a reason, or name who decided)."""


def as_asker(approver: Approver, session: SessionApprovals | None = None, agent: str | None = None) -> Asker:
    def ask(call: PreparedCall, pending: Decision) -> Decision | bool:
        return approver(ApprovalRequest(call, pending, session, agent))

    return ask


def approve_all(request: ApprovalRequest) -> Decision:
    """``--yes``: every question is answered yes. A deny is never asked, so it stays a deny."""
    return Decision.allow(source="--yes")


NobodyToAsk = Callable[[PreparedCall, Decision], Decision]
"""The refusal when nobody can be asked, given the call and the decision that asks (``mcp serve`` says how
to allow it there)."""


def nobody_asked(call: PreparedCall, pending: Decision) -> Decision:
    """The refusal where nobody can be asked, saying who asked and why."""
    asked = f"{pending.source} asks" if pending.source else "it needs a yes"
    return Decision.deny(f"{NOBODY_TO_ASK} ({asked}{': ' + pending.reason if pending.reason else ''})",
                         "no approver")


BeforeAsking = Callable[[PreparedCall], "Decision | None"]
"""Called just before a person is asked (a tool's plan step runs there, so the question shows its output):
a Decision refuses the call instead (the plan step failed), None goes on to ask."""


def build_asker(approver: Approver | None, *, assume_yes: bool = False, approve_risks: Collection[str] = (),
                session: SessionApprovals | None = None, nobody: NobodyToAsk | None = None,
                agent: str | None = None, before_asking: BeforeAsking | None = None) -> Asker:
    """The ``ask`` hook of every path: calls approved earlier in the session, then ``--approve`` by risk,
    then ``--yes``, then the approver. With none of them every question is a no that says who asked.
    ``before_asking`` runs only where the approver is asked (or its session answer depends on what it does:
    a plan approved for the session is the same plan only once planned again)."""
    risks = frozenset(approve_risks)
    asker = as_asker(approver, session, agent) if approver is not None else None

    def ask(call: PreparedCall, pending: Decision) -> Decision | bool:
        if session is not None and session.approved(call):
            return Decision.allow("approved earlier in this session", SESSION_SOURCE)
        if call.risk in risks:
            return Decision.allow(source=f"--approve {call.risk}")
        if assume_yes:
            return Decision.allow(source="--yes")
        if asker is None:
            return (nobody or nobody_asked)(call, pending)
        if before_asking is not None:
            refused = before_asking(call)
            if refused is not None:
                return refused
            if session is not None and session.approved(call):  # the same plan as one approved before
                return Decision.allow("approved earlier in this session", SESSION_SOURCE)
        return asker(call, pending)

    return ask
