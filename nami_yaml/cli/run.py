"""``nami run`` and ``nami chat``: the library's Agent, rendered for a person or as JSON lines.

This module is imported only when one of these commands is used; openai is imported later still, on the
first model request.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from nami_yaml.app.agent import Agent, build_model
from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MAX_STEPS,
    EXIT_OK,
    config_option,
    handle_errors,
    load_project,
    tools_option,
)
from nami_yaml.cli.completion import complete_session_ids
from nami_yaml.cli.piped import piped_stdin, with_attached_input
from nami_yaml.display import visible

STATUS_EXIT = {"answered": EXIT_OK, "error": EXIT_ERROR, "max_steps": EXIT_MAX_STEPS, "max_cost": EXIT_MAX_STEPS,
               "stopped": EXIT_ERROR, "interrupted": EXIT_INTERRUPTED}


def agent_options(function: Any) -> Any:
    options = [
        config_option,
        click.option("--model", "-m", "model_name", metavar="NAME", help="Model name (overrides $NAMI_MODEL and agent.yaml)."),
        click.option("--base-url", metavar="URL", help="OpenAI-compatible endpoint (overrides $NAMI_BASE_URL)."),
        click.option("--yes", "-y", "assume_yes", is_flag=True, help="Approve every call that would ask (never a deny)."),
        click.option("--approve", "approve_risks", metavar="RISKS", callback=parse_risks,
                     help="Approve calls of these risks that would ask, e.g. read,write (never a deny)."),
        click.option("--dry-run", is_flag=True, help="Run no tool (reads included): show what each call would run."),
        click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many model requests (exit 3)."),
        click.option("--no-stream", is_flag=True, help="Wait for whole responses instead of streaming."),
        tools_option,
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
                force: bool = False) -> Agent:
    """The library's Agent, with the terminal's trust and approval prompts, saving its session: a new one,
    or (``resume``: an id, or "" for the latest here) an earlier one continued."""
    from nami_yaml.cli.approve import terminal_approver

    flags = {"model.name": model_name, "model.base_url": base_url, "limits.max_steps": max_steps,
             "model.stream": False if no_stream else None}
    project = load_project(config, flags, list(extra_tools), will_run=True)
    agent = Agent(project, build_model(project.settings), approve=terminal_approver(), assume_yes=assume_yes,
                  approve_risks=approve_risks, dry_run=dry_run, on_event=on_event, via=via)
    if resume is None:
        agent.record_session()
        return agent
    loaded = agent.resume_session(resume or None, force=force)
    for note in loaded.repairs:
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
@handle_errors
def run(task: str, as_json: bool, continue_: bool, **options: Any) -> None:
    """Run one TASK to completion. The answer goes to stdout, progress to stderr.

    Input piped to nami is attached to TASK (`journalctl -u nginx | nami run "why does it fail?"`);
    with TASK `-`, the task itself is read from stdin.

    Exit codes: 0 answered, 1 error, 2 usage or config error, 3 step or cost limit reached, 130 interrupted.
    """
    from nami_yaml.cli.render import HumanRenderer, JsonRenderer

    renderer = JsonRenderer() if as_json else HumanRenderer()
    try:
        piped = piped_stdin()
        if task == "-":
            task, piped = task_from_stdin(piped), None
        agent = build_agent(on_event=renderer, via="run", resume="" if continue_ else None, **options)
        outcome = agent.run(attach(task, piped, agent))
    except BaseException as exc:
        if isinstance(renderer, JsonRenderer):  # a reader of the event stream learns why, and where it ends
            renderer.fail(exc)
        raise
    if outcome.status == "answered":
        renderer.answer(outcome.final_text)
        if outcome.error and not as_json:
            click.echo(f"nami: {outcome.error}", err=True)
    elif not as_json and outcome.status != "error":  # model errors were already shown by the renderer
        click.echo(f"nami: {outcome.error}", err=True)
    sys.exit(STATUS_EXIT[outcome.status])


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


CHAT_HELP = """\
Commands:
  /help     this help
  /tools    the tools the agent has
  /clear    forget the conversation (keeps the system prompt)
  /cost     tokens and cost of this session so far
  exit, quit or Ctrl-D to leave; Ctrl-C stops a running turn"""


@click.command("chat")
@agent_options
@click.option("--resume", is_flag=False, flag_value="", default=None, metavar="[ID]",
              shell_complete=complete_session_ids,
              help="Continue a saved session: ID (or its start), else the latest of this workspace.")
@force_option
@handle_errors
def chat(**options: Any) -> None:
    """Talk with the agent; the conversation carries across turns."""
    from nami_yaml.cli.lineinput import LineReader
    from nami_yaml.cli.render import HumanRenderer

    renderer = HumanRenderer(live_stdout=True)
    agent = build_agent(on_event=renderer, via="chat", **options)
    reader = LineReader()
    try:
        if reader.interactive:
            click.echo(f"nami chat: {len(agent.registry)} tools, session {agent.session_id}. /help for commands, "
                       "Ctrl-D to leave.", err=True)
        while True:
            line = reader.read("› ")
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text in ("exit", "quit", "/exit", "/quit"):
                break
            if text == "/help":
                click.echo(CHAT_HELP)
                continue
            if text == "/tools":
                from nami_yaml.cli.tools import first_sentence

                for tool in agent.registry:
                    click.echo(visible(f"{tool.name:<16} {tool.risk:<5} {first_sentence(tool.description)}"))
                continue
            if text == "/cost":
                from nami_yaml.session.show import format_totals

                click.echo(f"session {agent.session_id}: {format_totals(agent.meter.session)}")
                continue
            if text == "/clear":
                agent.reset()
                click.echo("(conversation cleared)", err=True)
                continue
            if text.startswith("/"):
                click.echo(f"unknown command {text.split()[0]}; /help lists them", err=True)
                continue
            outcome = agent.run(text)
            if outcome.status == "answered":
                renderer.answer(outcome.final_text)
            elif outcome.status == "interrupted":
                click.echo("(interrupted)", err=True)
            elif outcome.status != "error":
                click.echo(f"nami: {outcome.error}", err=True)
    finally:
        reader.close()
