"""A call's plan as a question shows it (the terminal, the queue and its page, a webhook, MCP elicitation):
the output of its tool's plan step (runners/plan_step.py), cut for reading, with where the whole of it is
and the SHA-256 the approval binds. Duck-typed on the call (``plan_step``): calls without one have none.

And the question asked before a plan step that would run without a sandbox (:class:`PlanStepCall`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import Decision
from nami_yaml.result import ToolResult

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


PLAN_STEP_RULE = "plan step without a sandbox"  # who asks the question before such a plan step (its source)


@dataclass
class PlanStepCall:
    """A tool's plan step as a call of its own, to ask about before it runs where it would run without a
    sandbox (runners/plan_step.py ``unsandboxed``): ``terraform plan`` runs the providers and ``data
    "external"`` programs of a folder the model chose. Asked like any call (terminal, queue, page, webhook,
    MCP elicitation): the same tool, target and arguments, but what is shown and bound is the plan step's
    command (then its show step's), environment, folder and sandbox. Never run itself."""

    call: Any  # the tool's call (a PreparedCall with ``plan_step``)

    @property
    def step(self) -> Any:
        return self.call.plan_step

    @property
    def name(self) -> str:
        return str(self.call.name)

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.call.arguments)

    @property
    def risk(self) -> str:
        return str(self.call.risk)

    @property
    def kind(self) -> str:
        return str(self.call.kind)

    @property
    def target(self) -> str | None:
        return getattr(self.call, "target", None)

    @property
    def invocation(self) -> Any:  # its environment, for the binding (approvals/binding.py)
        return self.step.plan

    def describe(self) -> str:
        return str(self.step.command_line())

    def plan(self) -> dict[str, Any]:
        plan = dict(self.step.plan.plan())
        if self.step.show is not None:
            plan["show"] = list(self.step.show.argv)
        return plan

    def run(self) -> ToolResult:
        return ToolResult.error("a plan step's question is answered, never run")

    def cancel(self) -> None:
        pass


def plan_step_question(call: Any, why: str) -> tuple[PlanStepCall, Decision]:
    """The question before ``call``'s plan step, which would run without a sandbox (``why``), and the
    decision that asks it (which says why, and what comes next)."""
    step = call.plan_step
    reason = (f"{call.name} plans first with `{step.command_line()}`, and here that runs without a sandbox "
              f"({why}): it runs what the configuration in {step.plan.cwd} names (providers, external programs) "
              "with your rights, before anyone saw a plan. Approve to run the plan step; you are then shown the "
              f"plan and asked about {call.name} itself. With bubblewrap installed (and sandbox.mode not off) plan "
              "steps run sandboxed, as a read, and this is not asked")
    return PlanStepCall(call), Decision("ask", reason, PLAN_STEP_RULE)
