"""``nami run`` and ``nami chat``: the library's Agent, rendered for a person or as JSON lines.

This module is imported only when one of these commands is used; openai is imported later still, on the
first model request.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nami_yaml.app.agent import Agent
from nami_yaml.app.agent import build_agent as library_build_agent
from nami_yaml.app.options import AgentOptions
from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_INVALID_ANSWER,
    EXIT_MAX_STEPS,
    EXIT_OK,
    config_option,
    handle_errors,
    prompt_trust,
    tools_option,
)
from nami_yaml.cli.piped import piped_stdin, with_attached_input
from nami_yaml.cli.style import color_option, configure, plain_option
from nami_yaml.display import safe_json, visible
from nami_yaml.spec.json_schemas import read_schema

if TYPE_CHECKING:
    from nami_yaml.cli.render import HumanRenderer
    from nami_yaml.cli.status import StatusLine

# The library's messages name no command; how to go on is the CLI's to say.
CONTINUE_HINTS = {
    "max_steps": ' Let the agent go on with `nami run --continue "go on"`, or raise the step limit (--max-steps).',
    "max_cost": ' Raise limits.max_cost and let the agent go on with `nami run --continue "go on"`.',
}
STATUS_EXIT = {"answered": EXIT_OK, "error": EXIT_ERROR, "max_steps": EXIT_MAX_STEPS, "max_cost": EXIT_MAX_STEPS,
               "stopped": EXIT_ERROR, "interrupted": EXIT_INTERRUPTED}
STATUS_EXIT["invalid_answer"] = EXIT_INVALID_ANSWER  # nami run --schema: no answer matched


def agent_options(function: Any) -> Any:
    options = [
        config_option,
        click.option("--model", "-m", "model_name", metavar="NAME", help="Model name (overrides $NAMI_MODEL and agent.yaml)."),
        click.option("--base-url", metavar="URL", help="OpenAI-compatible endpoint (overrides $NAMI_BASE_URL)."),
        click.option("--yes", "-y", "assume_yes", is_flag=True, help="Approve every call that would ask (never a deny)."),
        click.option("--approve", "approve_risks", metavar="RISKS", callback=parse_risks,
                     help="Approve calls of these risks that would ask, e.g. read,write (never a deny)."),
        click.option("--dry-run", is_flag=True, help="Run no tool (reads included): show what each call would run."),
        click.option("--target", metavar="NAME",
                     help="Run every call of a targeted tool on this target of agent.yaml (the model is not offered the choice)."),
        click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many model requests (exit 3)."),
        click.option("--agent", "agent", metavar="NAME", help="Run one of this project's named agents (`nami agents`)."),
        click.option("--no-stream", is_flag=True, help="Wait for whole responses instead of streaming."),
        tools_option,
        color_option,
        plain_option,
        click.option("--verbose", "-v", is_flag=True, help="Show each tool's whole result, not its first lines."),
        click.option("--quiet", "-q", is_flag=True, help="Show only the answer (and errors): no tool lines, no totals."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


RISKS = ("read", "write", "exec")


def parse_risks(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    risks = tuple(part.strip() for part in (value or "").split(",") if part.strip())
    unknown = [r for r in risks if r not in RISKS]
    if unknown:
        raise click.BadParameter(f"unknown risk {', '.join(unknown)}; risks are {', '.join(RISKS)}")
    return risks


def build_agent(config: str | None, model_name: str | None, base_url: str | None, assume_yes: bool,
                approve_risks: tuple[str, ...], dry_run: bool, max_steps: int | None, no_stream: bool,
                extra_tools: tuple[str, ...], on_event: Any, via: str, resume: str | None = None,
                force: bool = False, pause: StatusLine | None = None, agent: str | None = None,
                target: str | None = None, answer_schema: Any = None) -> Agent:
    """The library's agent for these flags, with the terminal's trust and approval prompts, saving its
    session: a new one, or (``resume``: an id, or "" for the latest here) an earlier one continued.
    ``pause``: the status line to hide while an approval is asked."""
    from nami_yaml.cli.approve import terminal_approver

    options = AgentOptions(
        config=config, model=model_name, base_url=base_url, max_steps=max_steps,
        stream=False if no_stream else None, tools=extra_tools, trust=prompt_trust,
        approve=terminal_approver(pause=pause.paused if pause is not None else None), assume_yes=assume_yes,
        approve_risks=approve_risks, dry_run=dry_run, on_event=on_event, via=via,
        record_session=resume is None, resume=resume, force=force, agent=agent, target=target)
    options.answer_schema = answer_schema  # --schema's value; False (chat): none, whatever agent.yaml says
    agent = library_build_agent(options)
    loaded = agent.resumed
    for note in loaded.repairs if loaded is not None else ():
        click.echo(f"nami: session {loaded.id}: {note}", err=True)
    return agent


force_option = click.option("--force", is_flag=True,
                            help="Continue a session recorded in another workspace or with other tools.")


@click.command("run")
@click.argument("task")
@agent_options
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line on stdout (tool_call, tool_result, message, error…), always ending with one final event.")
@click.option("--continue", "continue_", is_flag=True, help="Continue the latest session of this workspace.")
@force_option
@click.option("--schema", metavar="SCHEMA", help="The answer must be JSON matching this JSON Schema (a file, or inline JSON): stdout is exactly the value; exit 4 when none matched (agent.yaml: answer_schema).")
@handle_errors
def run(task: str, as_json: bool, continue_: bool, color: str, plain: bool, verbose: bool, quiet: bool,
        schema: str | None, **options: Any) -> None:
    """Run one TASK to completion. The answer goes to stdout, progress to stderr.

    Input piped to nami is attached to TASK (`journalctl -u nginx | nami run "why does it fail?"`);
    with TASK `-`, the task itself is read from stdin.

    Exit codes: 0 answered, 1 error, 2 usage or config error, 3 step or cost limit reached, 4 no answer
    matched the answer schema (--schema), 130 interrupted.
    """
    from nami_yaml.cli.render import JsonRenderer

    if as_json:
        configure(color, plain)  # for the trust prompt; the events themselves are never styled
    renderer = JsonRenderer() if as_json else human_renderer(color, plain, verbose, quiet)
    try:
        piped = piped_stdin()
        if task == "-":
            task, piped = task_from_stdin(piped), None
        given = read_schema(schema, base=Path.cwd(), what="--schema") if schema is not None else None
        agent = build_agent(on_event=renderer, via="run", resume="" if continue_ else None,
                            pause=getattr(renderer, "status", None), answer_schema=given, **options)
        if agent.answers is not None and hasattr(renderer, "live_stdout"):
            renderer.live_stdout = False  # stdout is the JSON value alone: text as it streams goes to stderr
        renderer.tokens = lambda: agent.meter.run.tokens
        renderer.begin()
        outcome = agent.run(attach(task, piped, agent))
    except BaseException as exc:
        if isinstance(renderer, JsonRenderer):  # a reader of the event stream learns why, and where it ends
            renderer.fail(exc)
        raise
    finally:
        renderer.close()
    if outcome.status == "answered":
        if agent.answers is None:
            renderer.answer(outcome.final_text)
        elif not as_json:
            print_value(outcome.answer)
        if outcome.error and not as_json:
            click.echo(f"nami: {outcome.error}", err=True)
    elif outcome.status == "invalid_answer":
        last = visible(outcome.final_text or "").rstrip() or "(empty)"
        click.echo(f"nami: {visible(outcome.error or '')}\nnami: the last answer was:\n{last}", err=True)
    elif not as_json and outcome.status != "error":  # model errors were already shown by the renderer
        click.echo(f"nami: {outcome.error}{CONTINUE_HINTS.get(outcome.status, '')}", err=True)
    sys.exit(STATUS_EXIT[outcome.status])


def print_value(value: Any) -> None:
    """A structured answer on stdout: indented on a terminal, one line for the program reading it."""
    # Control and invisible characters as \u escapes: the same JSON to a parser, nothing live on a terminal.
    if sys.stdout.isatty():
        click.echo(safe_json(value, indent=2))
    else:
        click.echo(safe_json(value, separators=(",", ":")))


def human_renderer(color: str, plain: bool, verbose: bool, quiet: bool, *,
                   live_stdout: bool | None = None) -> HumanRenderer:
    """The terminal view, once this process's colours are decided (the trust prompt uses them too)."""
    from nami_yaml.cli.render import NORMAL, QUIET, VERBOSE, HumanRenderer

    if verbose and quiet:
        raise click.UsageError("--verbose and --quiet cannot be used together")
    term = configure(color, plain)
    return HumanRenderer(term=term, live_stdout=live_stdout,
                         verbosity=QUIET if quiet else VERBOSE if verbose else NORMAL)


def task_from_stdin(piped: bytes | None) -> str:
    text = (piped or b"").decode("utf-8", errors="replace").strip()
    if not text:
        raise click.UsageError("`nami run -` reads the task from stdin, and nothing was piped in")
    return text


def attach(task: str, piped: bytes | None, agent: Agent) -> str:
    """The user's message: the task, with what was piped in attached, capped like a tool result."""
    if not piped:
        return task
    context = agent.project.context
    return with_attached_input(task, piped, context.settings.max_output, context.spill_dir)
