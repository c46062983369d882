"""Errors that nami knows how to report, and the map of every exception class nami defines.

Two rules decide what becomes of an exception:

* **Tool failures never escape the loop.** Whatever a tool raises while it is prepared or run
  (registry/executor.py catches every ``Exception``) becomes its result for the model: ``Error: <message>``
  for a ToolError, ``Error: <Type>: <message>`` for anything else. A guard that raises denies the call
  (agent/hooks.py ``strictest_opinion``: fail closed); an approver that raises is a no. The model's own
  failures (ModelError) and a hook's StopRun end the run with a status: ``Agent.run`` returns a
  RunOutcome and never raises for them.
* **Everything else reaches the CLI** (cli/common.py ``handle_errors``), which prints ``nami: <message>``,
  never a traceback, and exits with: 2 (EXIT_USAGE) for a SpecError (its problems listed, counted) or a
  ConfigError and its subclasses; 1 (EXIT_ERROR) for any other NamiError; 130 (EXIT_INTERRUPTED) for
  Ctrl-C (KeyboardInterrupt, click.Abort; SIGTERM is raised as KeyboardInterrupt); 0 when our stdout was
  closed (BrokenPipeError). ``nami run`` exits by its outcome's status (cli/run.py ``STATUS_EXIT``):
  answered 0, error 1, stopped 1, max_steps 3, max_cost 3 (EXIT_MAX_STEPS), invalid_answer 4
  (EXIT_INVALID_ANSWER), interrupted 130. Any other exception that reaches the CLI is a bug: a traceback.

The tree (module relative to ``nami_yaml``; what becomes of it)::

    Exception
    +-- NamiError ................. errors                  exit 1 (a known failure, a message for a human)
    |   +-- SpecError ............. errors                  exit 2, problems as file:line:col: $.path: message
    |   +-- ConfigError ........... errors                  exit 2 (agent.yaml cannot be found or used)
    |   |   +-- UntrustedProject .. app.project             exit 2 (agent.yaml not trusted: `nami trust`)
    |   |   |   +-- UntrustedTaskFile  batch.trust          exit 2 (a batch task file not trusted)
    |   |   +-- SessionRefused .... session.store           exit 2 (another workspace or tool set: --force)
    |   |   +-- ApprovalRefused ... approvals.store         exit 2 (`nami approvals`: an unknown, answered or
    |   |   |                                               withdrawn id, a second answer, or one refused)
    |   |   +-- ResultsError ...... batch.results           exit 2 (a batch results file cannot be used)
    |   |   +-- RayMissing ........ batch.ray_backend       exit 2 (`nami batch --ray` without ray)
    |   |   +-- McpUnavailable .... mcp                     exit 2 (`nami mcp serve` without the extra);
    |   |   |                                               agent.yaml's mcp_servers: a notice, not started
    |   |   +-- McpLoginError ..... mcp.oauth               exit 2 (`nami mcp login`: no OAuth there, refused,
    |   |   |                                               no redirect in time; nothing stored)
    |   |   +-- JinjaMissing ...... importers.jinja_template  exit 2 (`nami import holmes|shellmcp` without
    |   |                                                   the import extra)
    |   +-- ModelError ............ model.types             in a run: status "error" (exit 1); a failed
    |   |                                                   compaction summary: a note in its place;
    |   |                                                   outside a run exit 1 (nami doctor: a failed check)
    |   +-- AuditError ............ policy.audit            exit 1 (audit log unwritable: nothing runs); once
    |   |                                                   running, the audit log denies every call instead
    |   +-- SessionError .......... session.store           exit 1 (a session file cannot be found or read)
    |   +-- ImportProblem ......... importers.common        exit 1 (`nami import`: a source unreadable or not
    |                                                       of its format, an output file exists: nothing written)
    +-- ToolError ................. errors                  the tool's result: "Error: <message>"
    +-- StopRun ................... agent.hooks             ends the run with its status (max_cost: exit 3,
    |                                                       invalid_answer: exit 4, stopped: exit 1)
    +-- Interrupted ............... agent.tool_phase        status "interrupted": exit 130
    +-- McpConfigError ............ config.mcp_servers      an MCP server not started: a notice, its tools absent
    +-- ScaffoldError ............. app.scaffold            `nami init`: exit 1 (exit 2 for --tool NAME)
    +-- WorkspaceError ............ batch.workspace         the batch task ends "setup_failed"; the batch goes on
    +-- BrokenResponse ............ model.assembly          inside the client: becomes a ModelError
    |   +-- EmptyStream ........... model.assembly          a stream with no event: asked again, not streamed
    +-- _ErrorEvent ............... model.client            a stream's own error line: becomes a ModelError
    +-- TooLarge .................. model.assembly          inside the client: becomes a ModelError
    +-- Silent .................... model.assembly          inside the client: becomes a ModelError
    +-- PatternTimeout ............ registry.patterns       the call's validation error (a tool result)
    +-- ChildFailed ............... runners.pychild         a builtin's helper process failed: a tool result
    +-- GrepTimeout ............... runners.filters         output.grep ran too long: the output shown as it is
    +-- _TooLarge ................. spec.yamlpos            a Problem (YAML too large): SpecError, exit 2
    +-- ValueError
    |   +-- MatcherError .......... policy.matchers         a rule's bad matcher: a Problem, SpecError, exit 2
    |   +-- BadPattern ............ registry.patterns       a schema's bad pattern: the call's validation
    |   |                                                   error (a tool result)
    |   +-- TemplateError ......... runners.template        a bad template: a Problem at load, else a ToolError
    |   +-- BlockedURL ............ builtins.netguard       fetch refused the address: a tool result
    +-- RuntimeError
    |   +-- ParserMissing ......... shell.bash              the bash parser is absent: the command is read as
    |                                                       unreadable (never taken as harmless)
    +-- LookupError
        +-- UnknownLibraryName .... registry.library        tools.library: a Problem; `nami init --library`:
                                                            exit 2

tests/test_errors_tree.py checks that every exception class defined in nami_yaml is named above. This
module imports nothing of nami_yaml.
"""

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
