"""The agent loop and what it emits. Knows a Model, a Toolbox and Hooks; nothing about YAML, config or the CLI."""

from __future__ import annotations

from nami_yaml.agent.events import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    HistoryReplaced,
    MessageAppended,
    MessageEvent,
    NoticeEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from nami_yaml.agent.history import History
from nami_yaml.agent.hooks import CallRecord, Decision, Hooks, RequestInfo, StopRun, strictest
from nami_yaml.agent.loop import AgentLoop, RunOutcome, RunState
from nami_yaml.agent.toolbox import READ, PreparedCall, Toolbox

__all__ = [
    "READ",
    "AgentLoop",
    "ApprovalEvent",
    "CallRecord",
    "Decision",
    "ErrorEvent",
    "NoticeEvent",
    "Event",
    "EventBus",
    "FinalEvent",
    "History",
    "HistoryReplaced",
    "Hooks",
    "MessageAppended",
    "MessageEvent",
    "PreparedCall",
    "RequestInfo",
    "RunOutcome",
    "RunState",
    "StopRun",
    "TextDelta",
    "ToolCallEvent",
    "ToolResultEvent",
    "Toolbox",
    "UsageEvent",
    "strictest",
]
