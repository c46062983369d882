"""How a tool's processes run, as declared (plain values, no behaviour): its ``timeout``, ``cwd``, ``env``,
``env_passthrough``, ``stdin``, ``max_output``, ``output`` (how its stdout is shaped) and ``sandbox`` (what its
processes need of the sandbox), and where its longer docs come from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.sandbox_settings import SandboxNeeds

OUTPUT_FORMATS = ("text", "json", "jsonl", "lines")


@dataclass(frozen=True)
class OutputShape:
    """A tool's ``output:``: how its stdout is read (``format``), the JMESPath expression that picks what the
    model sees (``select``), the most items of an array it sees (``max_items``), and the JSON Schema of the
    selected value (``schema``, for MCP clients). Behaviour: runners/shape.py."""

    format: str = "text"
    select: str | None = None
    max_items: int | None = None
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    # Line filters, applied in this order to what the model would see (runners/filters.py). As written in
    # the tool file they may hold {param} placeholders; each call renders them (filters.rendered_shape).
    grep: str | None = None  # a regular expression: only the lines it matches
    lines: str | None = None  # "START-END", 1-based, both included; either side may be left out
    head: int | str | None = None  # the first N lines
    tail: int | str | None = None  # the last N lines

    @property
    def filters(self) -> bool:
        """Whether any line filter is set."""
        return any(value not in (None, "") for value in (self.grep, self.lines, self.head, self.tail))

    @property
    def shapes(self) -> bool:
        """Whether the output is changed at all before the model reads it."""
        return self.format != "text" or self.filters


@dataclass(frozen=True)
class ProcessOptions:
    """The ``timeout``, ``cwd``, ``env``, ``env_passthrough``, ``stdin``, ``max_output``, ``output`` and
    ``sandbox`` of a tool."""

    timeout: float | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_passthrough: tuple[str, ...] = ()
    # False: none of the host's variables but the few any program needs (env_secrets.MINIMAL_HOST_VARIABLES),
    # for a program that runs code the model wrote and can read its environment (jq's $ENV).
    host_env: bool = True
    stdin: str | None = None
    max_output: int | None = None
    output: OutputShape | None = None
    sandbox: SandboxNeeds = field(default_factory=SandboxNeeds)


@dataclass(frozen=True)
class DocSource:
    """A tool's longer docs, read on demand (never sent with requests): a file, or a command's output.
    A command runs like the tool's own processes (its cwd, env and timeout; output capped)."""

    file: Path | None = None
    command: tuple[str, ...] | None = None
    options: ProcessOptions = field(default_factory=ProcessOptions)
