"""The value every tool call ends in. Tool failures are results, never exceptions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolResult:
    content: str
    ok: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, **details: Any) -> ToolResult:
        text = message if message.startswith("Error:") else f"Error: {message}"
        return cls(content=text, ok=False, details=details)
