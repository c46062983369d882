"""What every command shares: the common options, loading the project (with the trust prompt), and
turning known errors into messages and exit codes."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from nami_yaml.app.project import Project, TrustRequest
from nami_yaml.app.trust_summary import warning_lines
from nami_yaml.cli.style import Paint, terminal
from nami_yaml.display import visible
from nami_yaml.errors import ConfigError, NamiError, SpecError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MAX_STEPS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_INVALID_ANSWER = 4  # no answer matched the answer schema (nami run --schema), retries included

config_option = click.option("--config", "-c", metavar="FILE", type=click.Path(dir_okay=False),
                             help="agent.yaml to use (else $NAMI_CONFIG, else the nearest one upwards).")
tools_option = click.option("--tools", "-t", "extra_tools", multiple=True, metavar="PATH", type=click.Path(),
                            help="Also load tool files from PATH (file, folder or glob); repeatable.")

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(code)


def handle_errors(function: F) -> F:
    """Known errors become a message and an exit code; never a traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except SpecError as exc:
            count = len(exc.problems)
            fail(f"{exc}\n{count} problem{'s' if count != 1 else ''} found", EXIT_USAGE)
        except ConfigError as exc:
            fail(f"nami: {exc}", EXIT_USAGE)
        except NamiError as exc:
            fail(f"nami: {exc}", EXIT_ERROR)
        except KeyboardInterrupt:
            fail("interrupted", EXIT_INTERRUPTED)
        except click.Abort:  # Ctrl-C or Ctrl-D at a question: the cursor is still on the question's line
            fail("\ninterrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            sys.stderr.close()  # `nami ... | head` closed our stdout: not an error worth a message
            sys.exit(EXIT_OK)

    return wrapper  # type: ignore[return-value]


def report_notices(project: Project) -> None:
    """Problems of the project's tool sources (an MCP server that did not start), one line each on stderr."""
    for notice in project.take_notices():
        click.echo(f"nami: {visible(notice)}", err=True)


def report_sandbox_notice(project: Project) -> None:
    """Where tools' processes cannot be sandboxed here: why, and how to get it (once, on stderr)."""
    notice = project.sandbox_notice()
    if notice is not None:
        click.echo(visible(notice), err=True)


def prompt_trust(request: TrustRequest) -> bool:
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    paint = terminal().err
    if request.kind == "task file":
        headline = f"This task file {request.status}. Its commands run on your machine."
    elif request.changed:
        headline = f"This project changed since you trusted it: {request.what_changed}. Its tools run commands on your machine."
    else:
        headline = f"This project's agent.yaml {request.status}. Its tools run commands on your machine."
    click.echo(paint.bold(headline), err=True)
    if not request.diff:  # a first trust, or nothing kept to compare with: the whole summary
        for line in painted_summary(request.summary, paint):
            click.echo(line, err=True)
        return click.confirm("Trust it and go on?", default=False, err=True)
    for line in retrust_lines(request.diff, request.summary, paint):
        click.echo(line, err=True)
    return confirm_or_show("Trust it and go on?", lambda: _echo_all(painted_summary(request.summary, paint), err=True),
                           err=True)


def retrust_lines(diff: list[str], summary: list[str], paint: Paint, how: str = "answer s") -> list[str]:
    """A re-trust: what changed (files and diff) first, every WARNING line of the summary, and how to see
    the rest of it. What did not change was read and trusted before; a WARNING is never held back."""
    warnings = warning_lines(summary)
    rest = len(summary) - len(warnings)
    return [*painted_summary([*diff, *warnings], paint),
            paint.dim(f"  (the full summary of what it sets and adds, {rest} line{'s' if rest != 1 else ''}: "
                      f"{how})")]


def confirm_or_show(question: str, show: Callable[[], None], *, err: bool = False) -> bool:
    """``question [y/N/s]``: yes, no (the default), or s to show the full summary and ask again."""
    choices = "[y/N/s]"
    while True:
        answer = click.prompt(f"{question} {choices}", default="", show_default=False, err=err).strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False
        if answer in ("s", "show", "summary"):
            show()
            choices = "[y/N]"
        else:
            click.echo("Error: invalid input", err=err)


def _echo_all(lines: list[str], *, err: bool = False) -> None:
    for line in lines:
        click.echo(line, err=err)


def painted_summary(lines: list[str], paint: Paint) -> list[str]:
    """The trust summary (already escaped) with warnings in red and its diff coloured like a diff."""
    out, in_diff = [], False
    for line in lines:
        body = line.lstrip()
        in_diff = in_diff or body.startswith("changed since you trusted it")
        if body.startswith("WARNING"):
            line = paint(line, "red", "bold")
        elif in_diff and line.startswith("    ") and body.startswith(("+++", "---")):
            line = paint.bold(line)
        elif in_diff and line.startswith("    ") and body[:1] in ("+", "-", "@"):
            line = {"+": paint.green, "-": paint.red, "@": paint.cyan}[body[0]](line)
        out.append(line)
    return out
