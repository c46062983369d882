"""A loaded, validated tool: what the model is told about it, and how it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from nami_yaml.registry.targets import TARGET_PARAMETER
from nami_yaml.runners.options import DocSource, OutputShape
from nami_yaml.runtime import RuntimeContext, TargetSet


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
    # The group it belongs to (a library group, an MCP server), whose definitions may be sent only once the
    # model loads them (registry.groups); None for built-ins, and for the project's own tool files while
    # they weigh at most ``tools.files_on_demand`` (app/toolset.py groups them past it).
    group: str | None = None
    # The project's targets, for a tool that runs on one (`target:` in its file, and targets declared); their
    # ``pinned`` one (`nami run --target`) takes every call, and `target` is then not offered to the model.
    targets: TargetSet | None = None
    output: OutputShape | None = None  # how its stdout is shaped (`output:`); its schema goes to MCP clients

    @property
    def targeted(self) -> bool:
        return self.targets is not None

    def argument_names(self) -> list[str]:
        """The names a call's arguments may have when decided on: the parameters, and a targeted tool's
        ``target`` (also when pinned, where the executor fills it in)."""
        names = list(self.parameters.get("properties") or {})
        return [*names, TARGET_PARAMETER] if self.targeted and TARGET_PARAMETER not in names else names

    def definition(self, *, docs_hint: bool = False) -> dict[str, Any]:
        """The entry of the OpenAI ``tools`` list, exactly as sent to the model. ``docs_hint``: say that
        tool_docs can read this tool's docs (only when the agent has tool_docs)."""
        description = self.description + (DOCS_HINT if docs_hint and self.docs is not None else "")
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": self.parameters},
        }
