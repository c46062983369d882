"""The places where policy, approval, audit, sessions and compaction attach to the loop.

The loop calls these and knows nothing of what is behind them: a policy module decides, the CLI or an API
user answers questions, an audit log or a session file records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from nami_yaml.model.types import ModelError, ToolCall, Usage
from nami_yaml.result import ToolResult

if TYPE_CHECKING:
    from nami_yaml.agent.history import History
    from nami_yaml.agent.toolbox import PreparedCall

Action = Literal["allow", "deny", "ask"]
_STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


@dataclass(frozen=True)
class Decision:
    """Whether a call may run. ``reason`` travels to the model (for a deny) and to events and audit lines;
    ``source`` says who decided: ``permissions.exec``, ``rule agent.yaml:14:5``, ``user``, ``--yes``…"""

    action: Action
    reason: str | None = None
    source: str | None = None

    @classmethod
    def allow(cls, reason: str | None = None, source: str | None = None) -> Decision:
        return cls("allow", reason, source)

    @classmethod
    def deny(cls, reason: str | None = None, source: str | None = None) -> Decision:
        return cls("deny", reason, source)

    @classmethod
    def ask(cls, reason: str | None = None, source: str | None = None) -> Decision:
        return cls("ask", reason, source)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "reason": self.reason, "source": self.source}


def strictest(decisions: Iterable[Decision | None]) -> Decision | None:
    """deny > ask > allow; the first of equally strict decisions wins (it is the one reported)."""
    best: Decision | None = None
    for decision in decisions:
        if decision is not None and (best is None or _STRICTNESS[decision.action] > _STRICTNESS[best.action]):
            best = decision
    return best


@dataclass
class CallRecord:
    """One call from the model's request to its result, for ``after_tool`` hooks (audit, sessions)."""

    call: ToolCall  # as the model sent it: raw argument text
    prepared: PreparedCall | None  # None when the call never got past validation
    decision: Decision | None  # None when nothing was decided (invalid call, cut-off turn, interrupted)
    result: ToolResult
    started: float | None = None  # time.time() when it started running; None if it never ran
    duration: float | None = None
    asked: Decision | None = None  # the policy's ask, when ``decision`` is the answer to it


@dataclass
class RequestInfo:
    """What a ``before_request`` hook sees before each model request."""

    history: History
    tools: list[dict[str, Any]]
    step: int  # the number of this request in the run, from 1
    last_usage: Usage | None  # the previous request's usage, if the server reported it
    error: ModelError | None = None  # set when the request is retried after a context-length error


BeforeTool = Callable[["PreparedCall"], "Decision | None"]
"""Returns a decision, or None for "no opinion"; of all opinions the strictest wins."""

Asker = Callable[["PreparedCall", Decision], "Decision | bool"]
"""Answers a decision of ``ask``: allow or deny (a bool means allow/deny by the user)."""

AfterTool = Callable[[CallRecord], None]

ResultNote = Callable[[CallRecord], "str | None"]
"""Called once a call's result is known, before it is reported (event, audit, history): text to add to the
result the model reads, or None (a PostToolUse hook's reason). A note that fails is left out."""

Rerun = Callable[["PreparedCall", ToolResult], "tuple[PreparedCall, Decision] | None"]
"""Offered each finished call (on the loop's thread, once per call): another call to run in its place, with
the decision that allowed it (a person's yes to rerun a call the sandbox stopped, unsandboxed), or None
to keep the result."""

BeforeRequest = Callable[[RequestInfo], "list[dict[str, Any]] | None"]
"""May return a new message list (compaction, elision); it replaces the history before the request.
May raise :class:`StopRun` to end the run before the request is sent (a cost limit)."""

AfterRun = Callable[[Any], "dict[str, Any] | None"]
"""Called with the RunOutcome before the ``final`` event; a returned dict is merged into
``outcome.totals`` and sent in the event (token totals and cost, from an accounting hook). A hook that read
the answer as a value sets ``outcome.answer`` and ``outcome.structured``; the event carries it then."""


AfterAnswer = Callable[["str | None"], "str | None"]
"""Called with the text of the model's final answer (a turn that calls no tool) before the run ends. A
returned string goes back to the model as the user's next message and the run goes on (the next request is
a step like any other: max_steps holds); None accepts the answer. May raise :class:`StopRun` to end the run
with its status, the answer kept as the outcome's text (a structured answer that never matched its schema).
The first hook that returns a message wins."""


def failed_opinion(exc: Exception) -> Decision:
    """The opinion of a guard that raised instead of answering: a broken guard fails closed."""
    return Decision.deny(f"the policy failed: {type(exc).__name__}: {exc}", "policy")


def strictest_opinion(guards: Iterable[BeforeTool], call: PreparedCall,
                      given: Iterable[Decision | None] = ()) -> Decision | None:
    """The one place "the strictest opinion wins, fail closed" is decided: of ``given`` (opinions already
    formed) and each guard's opinion on ``call``, the strictest (deny > ask > allow, the first of equals
    reported); a guard that raises denies (:func:`failed_opinion`). None: nobody had an opinion."""
    opinions = list(given)
    for guard in guards:
        try:
            opinions.append(guard(call))
        except Exception as exc:  # a broken guard must fail closed
            opinions.append(failed_opinion(exc))
    return strictest(opinions)


class StopRun(Exception):
    """Raised by a ``before_request`` hook to end the run cleanly before the next request, or by an
    ``after_answer`` hook to refuse the answer for good: the loop returns an outcome with this ``status``
    (e.g. ``max_cost``) and the message as its error."""

    def __init__(self, message: str, status: str = "stopped"):
        super().__init__(message)
        self.status = status


NOBODY_TO_ASK = "approval is needed and there is no one to ask"


def answer(ask: Asker | None, call: PreparedCall, pending: Decision) -> tuple[Decision, dict[str, Any]]:
    """Settle a decision of ``ask``: the asker's answer as a Decision (a bool is the user's yes or no), and
    details for the record when asking failed. Nobody to ask, or an asker that fails, is a no. A deny is
    never asked: only ``ask`` comes here."""
    assert pending.action == "ask", "only a decision of ask is asked about"
    if ask is None:
        return Decision.deny(NOBODY_TO_ASK, "no approver"), {}
    try:
        reply = ask(call, pending)
    except Exception as exc:  # an approval that cannot be asked is a "no"
        return Decision.deny(None, "user"), {"approval_error": f"{type(exc).__name__}: {exc}"}
    if isinstance(reply, Decision):
        if reply.action == "ask":  # an asker cannot pass the question on: nobody said yes
            return Decision.deny(reply.reason or NOBODY_TO_ASK, reply.source or "no approver"), {}
        return reply, {}
    return Decision("allow" if reply else "deny", None, "user"), {}


@dataclass
class Hooks:
    before_tool: list[BeforeTool] = field(default_factory=list)
    ask: Asker | None = None  # None: nobody can be asked, so "ask" becomes "deny"
    after_tool: list[AfterTool] = field(default_factory=list)
    result_notes: list[ResultNote] = field(default_factory=list)
    rerun: Rerun | None = None  # None: a result is final
    before_request: list[BeforeRequest] = field(default_factory=list)
    after_answer: list[AfterAnswer] = field(default_factory=list)
    after_run: list[AfterRun] = field(default_factory=list)
