"""How a tool's processes run, as declared (plain values, no behaviour): its ``timeout``, ``cwd``, ``env``,
``env_passthrough``, ``stdin`` and ``max_output``, and where its longer docs come from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ProcessOptions:
    """The ``timeout``, ``cwd``, ``env``, ``env_passthrough``, ``stdin`` and ``max_output`` of a tool."""

    timeout: float | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_passthrough: tuple[str, ...] = ()
    stdin: str | None = None
    max_output: int | None = None


@dataclass(frozen=True)
class DocSource:
    """A tool's longer docs, read on demand (never sent with requests): a file, or a command's output.
    A command runs like the tool's own processes (its cwd, env and timeout; output capped)."""

    file: Path | None = None
    command: tuple[str, ...] | None = None
    options: ProcessOptions = field(default_factory=ProcessOptions)
