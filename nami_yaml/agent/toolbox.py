"""What the loop needs from the tool side. The registry/executor implements these; the loop imports no tool code."""

from __future__ import annotations

from typing import Any, Protocol

from nami_yaml.result import ToolResult

READ = "read"  # the only risk that may run in parallel; anything else runs alone, in call order


class PreparedCall(Protocol):
    """A validated call, ready to be decided on, shown, run or cancelled."""

    name: str
    arguments: dict[str, Any]  # validated, defaults applied
    risk: str  # "read" | "write" | "exec"
    kind: str  # how it runs: "command" | "script" | "entrypoint" | … (approval and audit show it accordingly)

    def describe(self) -> str:
        """One line for humans: the rendered argv, or ``write_file path=a.py content=<1,234 chars>``."""
        ...

    def plan(self) -> dict[str, Any]:
        """Everything that will run, for approval prompts, --dry-run and the audit log: for a process
        ``argv``, ``cwd``, ``stdin``, ``timeout``, ``env_set``, ``env_removed``; for Python ``entrypoint``
        and ``arguments``."""
        ...

    def run(self) -> ToolResult:
        """Never raises; stops early (killing its process group) when cancelled."""
        ...

    def cancel(self) -> None:
        """Cancel this call only; safe to call from any thread, before, during or after ``run``."""
        ...

    # Optional: ``stops_when_cancelled`` (bool), true where run() returns soon once cancelled, keeping what
    # it has (a process it kills). Such a call that runs alone runs on the loop's thread, else on a worker.


class Toolbox(Protocol):
    def definitions(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list, in a deterministic order; asked for before each request. It may grow
        between requests (tools loaded on demand), and only at its end."""
        ...

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall | ToolResult:
        """A runnable call, or an error result for the model (unknown tool, bad JSON, schema violation)."""
        ...
