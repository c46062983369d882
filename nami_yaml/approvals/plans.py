"""A call's plan as a question shows it (the terminal, the queue and its page, a webhook, MCP elicitation):
the output of its tool's plan step (runners/plan_step.py), cut for reading, with where the whole of it is
and the SHA-256 the approval binds. Duck-typed on the call (``plan_step``): calls without one have none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_PLAN_CHARS = 20_000  # of a plan's output kept in a queue entry and an MCP question
MAX_PLAN_LINES = 80  # of a plan's output on a terminal


@dataclass(frozen=True)
class ShownPlan:
    command: str  # the plan step as one line (plan command, then show command)
    text: str  # its output as shown (the tool's output cut: head and tail)
    sha256: str | None  # what the approval binds: the plan file's, else the whole output's
    saved: str | None  # where the whole output is, when it was cut


def shown_plan(call: Any) -> ShownPlan | None:
    """The plan of ``call`` once its plan step ran well; None for a call without one (or not planned)."""
    step = getattr(call, "plan_step", None)
    outcome = getattr(step, "outcome", None)
    if step is None or outcome is None or not outcome.ok:
        return None
    return ShownPlan(step.command_line(), outcome.shown, outcome.sha256, outcome.saved)


def cut(text: str, limit: int = MAX_PLAN_CHARS, saved: str | None = None) -> str:
    """``text`` cut to ``limit`` characters, saying so (and where the whole text is)."""
    if len(text) <= limit:
        return text
    where = f"; the whole plan: {saved}" if saved else ""
    return text[:limit] + f"\n… (cut at {limit:,} characters{where})"
