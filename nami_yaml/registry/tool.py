"""A loaded, validated tool: what the model is told about it, and how it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from nami_yaml.runtime import RuntimeContext


class Invocation(Protocol):
    def describe(self) -> str: ...
    def plan(self) -> dict[str, Any]: ...
    def run(self) -> Any: ...


class Runner(Protocol):
    kind: str

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> Invocation: ...


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

    def definition(self) -> dict[str, Any]:
        """The entry of the OpenAI ``tools`` list, exactly as sent to the model."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }
