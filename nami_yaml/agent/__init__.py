"""The agent loop and what it emits. Knows a Model and a Toolbox; nothing about YAML, config or the CLI."""

from __future__ import annotations

from nami_yaml.agent.events import (
    ApprovalEvent,
    ErrorEvent,
    Event,
    FinalEvent,
    MessageEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from nami_yaml.agent.loop import AgentLoop, RunOutcome
from nami_yaml.agent.toolbox import PreparedCall, Toolbox

__all__ = [
    "AgentLoop",
    "ApprovalEvent",
    "ErrorEvent",
    "Event",
    "FinalEvent",
    "MessageEvent",
    "PreparedCall",
    "RunOutcome",
    "TextDelta",
    "ToolCallEvent",
    "ToolResultEvent",
    "Toolbox",
    "UsageEvent",
]
