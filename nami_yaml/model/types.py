"""What the loop and the model client exchange. No openai import here: the loop depends on this only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nami_yaml.errors import NamiError


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text exactly as the model sent it; the executor parses and validates


@dataclass
class Usage:
    """Token counts. ``reported`` is False while no server has said how many tokens it used: a run
    total that stays at zero because the server sends no usage, not because nothing was used."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0  # part of completion_tokens, where the server says how many
    reported: bool = True

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.reported = self.reported or other.reported


@dataclass
class AssistantTurn:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message appended to history (stable key order, so request bytes stay stable)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class ModelError(NamiError):
    """The endpoint failed after retries. ``message`` is one line for a human, with what to do.

    ``kind`` classifies failures the loop can act on: ``"context_length"`` (the prompt no longer fits, so a
    before_request hook may compact and the loop retries once); ``context_window`` is then the server's
    context in tokens where it said so (or publishes it), for compaction to keep to from then on.
    """

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None,
                 context_window: int | None = None):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.context_window = context_window


class Model(Protocol):
    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: Callable[[str], None] | None = None,
    ) -> AssistantTurn:
        """Send one request; stream text to ``on_text`` as it arrives; raise ModelError on failure."""
        ...
