"""What an approver is asked, and how an API user's simple callable becomes the loop's ``ask`` hook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import Asker, Decision
from nami_yaml.agent.toolbox import PreparedCall


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that needs a yes or no, and why it was not simply allowed."""

    call: PreparedCall
    pending: Decision  # the "ask" decision: its source says which setting or rule asks

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


Approver = Callable[[ApprovalRequest], "Decision | bool"]
"""Returns True/False (the user's yes or no) or a Decision (to give a reason, or name who decided)."""


def as_asker(approver: Approver) -> Asker:
    def ask(call: PreparedCall, pending: Decision) -> Decision | bool:
        return approver(ApprovalRequest(call, pending))

    return ask


def approve_all(request: ApprovalRequest) -> Decision:
    """``--yes``: every question is answered yes. A deny is never asked, so it stays a deny."""
    return Decision.allow(source="--yes")
