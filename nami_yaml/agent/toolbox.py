"""What the loop needs from the tool side. The registry/executor implements these; the loop imports no tool code."""

from __future__ import annotations

from typing import Any, Protocol

from nami_yaml.result import ToolResult

READ = "read"  # the only risk that runs without approval and in parallel; anything else is treated as write


class PreparedCall(Protocol):
    """A validated call, ready to run."""

    name: str
    arguments: dict[str, Any]  # validated, defaults applied
    risk: str  # "read" | "write" | "exec"

    def describe(self) -> str:
        """One line for humans: the rendered argv, or ``write_file path=a.py content=<1,234 chars>``."""
        ...

    def run(self) -> ToolResult:
        """Never raises; honours the session cancel event (kills its process group)."""
        ...


class Toolbox(Protocol):
    def definitions(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list, in a deterministic order."""
        ...

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall | ToolResult:
        """A runnable call, or an error result for the model (unknown tool, bad JSON, schema violation)."""
        ...
