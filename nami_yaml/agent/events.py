"""What the loop reports while it runs. The CLI renders these; ``--json`` prints one ``to_json()`` per line.

History events (``history_*``) carry whole messages for session files, and the accounting and compaction
hooks publish theirs (``usage_counted``, ``compacted``) on the same bus for the same readers; none of these
are part of ``--json`` (:data:`SESSION_EVENTS`). Nor are the events a tracer reads (:data:`TRACE_EVENTS`: a run
and a model request starting, a response's finish reason, what was decided about a call and how it runs),
which only mark where things begin and end for subscribers such as nami_yaml/telemetry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from nami_yaml.model.types import Usage


def usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


class _Event:
    type: str

    def to_json(self) -> dict[str, Any]:
        # "type" first so a line-oriented reader can dispatch on the start of each line.
        data: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name != "type":
                data[f.name] = getattr(self, f.name)
        return data


@dataclass
class TextDelta(_Event):
    """A piece of assistant text as it streams in."""

    text: str
    type: str = field(default="text_delta", init=False)


@dataclass
class MessageEvent(_Event):
    """The assistant text of one step, once complete."""

    content: str
    type: str = field(default="message", init=False)


@dataclass
class ToolCallEvent(_Event):
    """A call the model asked for. ``arguments`` is the validated dict, or the raw text if it did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | str
    summary: str
    type: str = field(default="tool_call", init=False)


@dataclass
class ToolResultEvent(_Event):
    id: str
    name: str
    ok: bool
    content: str
    details: dict[str, Any]
    type: str = field(default="tool_result", init=False)


@dataclass
class UsageEvent(_Event):
    """Token counts of one step (the run's total is in ``final``)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int = 0
    type: str = field(default="usage", init=False)


@dataclass
class FinalEvent(_Event):
    """Always the last event of a run. ``error`` says why a run that is not "answered" stopped.
    ``usage`` is what the server reported; ``totals`` (from an accounting hook, when there is one) adds
    estimates where it reported nothing, and the cost.
    ``usage_reported`` is false when the server sent no token counts: ``usage`` is zeros, not a measure."""

    text: str | None
    status: str
    usage: dict[str, int]
    error: str | None = None
    totals: dict[str, Any] | None = None
    usage_reported: bool = True
    # A structured answer (``nami run --schema``): the value, sent as ``answer`` only when ``structured``.
    answer: Any = None
    structured: bool = False
    type: str = field(default="final", init=False)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if not data.pop("structured"):
            del data["answer"]
        return data


@dataclass
class ErrorEvent(_Event):
    message: str
    type: str = field(default="error", init=False)


@dataclass
class NoticeEvent(_Event):
    """Something the person should know that is not an error: that tools run without the sandbox here."""

    message: str
    type: str = field(default="notice", init=False)


@dataclass
class ToolProgress(_Event):
    """How far a running call is, as the tool says (an MCP server's progress notification): ``3/10 (30%)
    copying``. Sent from the thread the tool reports on, while the call runs; for the status line."""

    id: str
    name: str
    message: str
    type: str = field(default="tool_progress", init=False)


@dataclass
class ServerLog(_Event):
    """A log message an MCP server sent (notifications/message), redacted: shown with -v. Sent from the
    servers' thread, whenever it comes."""

    server: str
    level: str
    message: str
    type: str = field(default="server_log", init=False)


@dataclass
class ApprovalEvent(_Event):
    """The decision on a call that was not simply allowed: asked and answered, or denied.
    ``source`` says who decided (``user``, ``--yes``, ``permissions.exec``, a rule's position)."""

    id: str
    name: str
    approved: bool
    reason: str | None = None
    source: str | None = None
    type: str = field(default="approval", init=False)


@dataclass
class DryRunEvent(_Event):
    """Just before ``final`` in a dry run: every call the model made and what would have happened to it."""

    calls: list[dict[str, Any]]
    type: str = field(default="dry_run", init=False)


@dataclass
class MessageAppended(_Event):
    """A message added to the history, exactly as it will be sent."""

    index: int
    message: dict[str, Any]
    type: str = field(default="history_append", init=False)


@dataclass
class HistoryReplaced(_Event):
    """The history was replaced (``/clear``, compaction); ``messages`` is the new list."""

    reason: str
    messages: list[dict[str, Any]]
    type: str = field(default="history_replace", init=False)


@dataclass
class UsageCounted(_Event):
    """One model request as the accounting counted it (``record``: its tokens, estimated or reported, and
    cost), for session files."""

    record: dict[str, Any]
    type: str = field(default="usage_counted", init=False)


@dataclass
class Compacted(_Event):
    """What a compaction did (``record``), for session files; the new history follows as history_replace."""

    record: dict[str, Any]
    type: str = field(default="compacted", init=False)


@dataclass
class SubagentRan(_Event):
    """A sub-agent ran a task handed to it (its own session, when sessions are recorded), for session files."""

    agent: str
    session: str | None
    status: str
    type: str = field(default="subagent", init=False)


@dataclass
class RunStarted(_Event):
    """A run begins (its ``final`` ends it), for tracers."""

    type: str = field(default="run_start", init=False)


@dataclass
class RequestStarted(_Event):
    """A model request is about to be sent (its before_request hooks have run), for tracers; ``step`` from 1."""

    step: int
    type: str = field(default="request_start", init=False)


@dataclass
class ModelResponded(_Event):
    """The answer to the request of ``step`` came back whole (a failed request ends with ``error`` instead),
    for tracers: why the model stopped, and its usage as the server reported it (None: it reported none)."""

    step: int
    finish_reason: str | None
    usage: dict[str, int] | None
    type: str = field(default="response", init=False)


@dataclass
class ToolDecided(_Event):
    """What was decided about a valid call and how it runs, for tracers: sent before it runs (again when it
    runs once more without the sandbox). ``source`` is who decided; ``sandboxed`` None when it starts no
    process. ``trace`` is the call's own carrier of trace context (W3C ``traceparent``): what a tracer puts in
    it reaches what the call starts (its process's TRACEPARENT, an MCP request, a sub-agent's spans); None
    where the call has none (tracing off)."""

    id: str
    name: str
    action: str
    source: str | None
    risk: str
    kind: str
    target: str | None = None
    sandboxed: bool | None = None
    trace: dict[str, str] | None = None
    type: str = field(default="tool_decided", init=False)


Event = (
    TextDelta | MessageEvent | ToolCallEvent | ToolResultEvent | UsageEvent | FinalEvent | ErrorEvent
    | ApprovalEvent | DryRunEvent | MessageAppended | HistoryReplaced | UsageCounted | Compacted | SubagentRan
    | RunStarted | RequestStarted | ModelResponded | ToolDecided | ToolProgress | ServerLog
)

HISTORY_EVENTS = frozenset({"history_append", "history_replace"})
SESSION_EVENTS = HISTORY_EVENTS | {"usage_counted", "compacted", "subagent"}  # for session files, not for --json
TRACE_EVENTS = frozenset({"run_start", "request_start", "response", "tool_decided"})  # for tracers only
# Sent from other threads while a call runs, for the person at the terminal (the status line, -v): never
# written where lines from two threads could interleave (--json), nor recorded.
LIVE_EVENTS = frozenset({"tool_progress", "server_log"})
NOT_STREAMED = SESSION_EVENTS | TRACE_EVENTS | LIVE_EVENTS  # neither part of --json nor of Agent.stream()


class EventBus:
    """Hands every event to each sink in turn (a renderer, ``--json``, an audit log, a session file)."""

    def __init__(self, *sinks: Callable[[Event], None] | None):
        self.sinks: list[Callable[[Event], None]] = [s for s in sinks if s is not None]

    def add(self, sink: Callable[[Event], None]) -> None:
        self.sinks.append(sink)

    def remove(self, sink: Callable[[Event], None]) -> None:
        self.sinks.remove(sink)

    def __call__(self, event: Event) -> None:
        for sink in list(self.sinks):
            sink(event)
