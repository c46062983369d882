"""Errors that nami knows how to report. The CLI turns each into a message and an exit code."""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Problem:
    """One finding about a YAML file, printed as ``file:line:col: $.path: message``.

    A warning (``file:line:col: $.path: warning: message``) is worth fixing but does not stop the tool
    from loading: `nami check` shows it, `nami check --strict` fails on it.
    """

    file: str
    line: int
    col: int
    path: str
    message: str
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def __str__(self) -> str:
        label = "" if self.is_error else f"{self.severity}: "
        return f"{self.file}:{self.line}:{self.col}: {self.path}: {label}{self.message}"

    def as_dict(self) -> dict[str, str | int]:
        return {"file": self.file, "line": self.line, "col": self.col, "path": self.path,
                "message": self.message, "severity": self.severity}


def only_errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.is_error]


class NamiError(Exception):
    """A known failure with a message meant for a human; never shown as a traceback."""


class SpecError(NamiError):
    """One or more problems found while loading YAML (tool files or agent.yaml)."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.col, p.path))
        super().__init__("\n".join(str(p) for p in self.problems))


class ConfigError(NamiError):
    """agent.yaml cannot be found or used (not a schema problem: those are SpecErrors)."""


class ToolError(Exception):
    """Raised by a tool implementation to return a clean error result to the model.

    The executor turns it into ``Error: <message>`` without the exception type, because the
    message was written for the model.
    """
