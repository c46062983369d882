"""A loaded, validated tool: what the model is told about it, and how it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from nami_yaml.runners.options import DocSource, OutputShape
from nami_yaml.runtime import RuntimeContext


class Invocation(Protocol):
    kind: str  # "command" | "script" | "entrypoint"

    def describe(self) -> str: ...
    def plan(self) -> dict[str, Any]: ...
    def run(self) -> Any: ...


class Runner(Protocol):
    kind: str

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> Invocation: ...


DOCS_HINT = " Details: tool_docs."  # appended to the description of a tool with docs, when tool_docs is there


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    risk: str
    runner: Runner
    source: str  # "file:line:col" of the tool's declaration, for messages that name where a tool came from
    builtin: bool = False
    writes: tuple[str, ...] = ()  # parameters holding paths the tool writes (`writes:` in the tool file)
    docs: DocSource | None = None
    output: OutputShape | None = None  # how its stdout is shaped (`output:`); its schema goes to MCP clients

    def definition(self, *, docs_hint: bool = False) -> dict[str, Any]:
        """The entry of the OpenAI ``tools`` list, exactly as sent to the model. ``docs_hint``: say that
        tool_docs can read this tool's docs (only when the agent has tool_docs)."""
        description = self.description + (DOCS_HINT if docs_hint and self.docs is not None else "")
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": self.parameters},
        }
