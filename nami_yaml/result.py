"""The value every tool call ends in. Tool failures are results, never exceptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Streams:
    """A process's output kept apart, for a person running a tool by hand (`nami tools call`): the tool's
    stdout, its stderr, and nami's notes on how it ended. The model reads ``ToolResult.content``."""

    stdout: str
    stderr: str
    status: tuple[str, ...] = ()


@dataclass
class ToolResult:
    content: str
    ok: bool = True
    details: dict[str, Any] = field(default_factory=dict)
    streams: Streams | None = field(default=None, repr=False, compare=False)
    # The output as a value, when the tool's ``output:`` read it as one (details["output"]["parsed"]): what
    # an MCP client gets as structuredContent.
    value: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def error(cls, message: str, **details: Any) -> ToolResult:
        text = message if message.startswith("Error:") else f"Error: {message}"
        return cls(content=text, ok=False, details=details)


def escalation(source: str | None, reason: str | None, first: ToolResult) -> dict[str, Any]:
    """``details["escalated"]`` of a call run again without the sandbox once approved: who approved it and
    why, and how its sandboxed run ended."""
    return {"source": source, "reason": reason,
            "first": {key: first.details[key] for key in ("exit_code", "sandbox_failure") if key in first.details}}
