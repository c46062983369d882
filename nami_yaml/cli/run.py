"""``nami run`` and ``nami chat``: wire config, registry, model client and loop together.

This module is imported only when one of these commands is used; openai is imported later still,
when the model client is built.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import click

from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MAX_STEPS,
    EXIT_OK,
    config_option,
    handle_errors,
    session,
    tools_option,
)
from nami_yaml.errors import ConfigError, NamiError

STATUS_EXIT = {"answered": EXIT_OK, "error": EXIT_ERROR, "max_steps": EXIT_MAX_STEPS,
               "interrupted": EXIT_INTERRUPTED}


def agent_options(function: Any) -> Any:
    options = [
        config_option,
        click.option("--model", "-m", "model_name", metavar="NAME", help="Model name (overrides $NAMI_MODEL and agent.yaml)."),
        click.option("--base-url", metavar="URL", help="OpenAI-compatible endpoint (overrides $NAMI_BASE_URL)."),
        click.option("--yes", "-y", "assume_yes", is_flag=True, help="Approve write and exec tools without asking."),
        click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many model requests (exit 3)."),
        click.option("--no-stream", is_flag=True, help="Wait for whole responses instead of streaming."),
        tools_option,
    ]
    for option in reversed(options):
        function = option(function)
    return function


@dataclass
class Agent:
    loop: Any
    messages: list[dict[str, Any]]
    registry: Any


def build_agent(config: str | None, model_name: str | None, base_url: str | None, assume_yes: bool,
                max_steps: int | None, no_stream: bool, extra_tools: tuple[str, ...], on_event: Any) -> Agent:
    from nami_yaml.agent.loop import AgentLoop
    from nami_yaml.cli.approve import make_approver
    from nami_yaml.config.prompt import system_prompt
    from nami_yaml.model.client import OpenAIChatModel
    from nami_yaml.registry.executor import Executor

    flags = {"model.name": model_name, "model.base_url": base_url, "limits.max_steps": max_steps,
             "model.stream": False if no_stream else None}
    effective, registry, ctx = session(config, flags, list(extra_tools), will_run=True)
    get = effective.get
    if not get("model.name") or not get("model.base_url"):
        missing = "model.name" if not get("model.name") else "model.base_url"
        raise ConfigError(f"{missing} is not set: give it in agent.yaml, or use --model / --base-url "
                          f"(or $NAMI_MODEL / $NAMI_BASE_URL)")
    options = dict(get("model.options") or {})
    if get("model.max_tokens") is not None:
        options["max_tokens"] = get("model.max_tokens")
    key_source = effective.api_key_source
    model = OpenAIChatModel(
        get("model.name"), get("model.base_url"), api_key=effective.api_key,
        # Error hints name the variable the key came from, or the one it should be in.
        api_key_env=key_source[1:] if key_source.startswith("$") else get("model.api_key_env"),
        stream=bool(get("model.stream")), max_retries=int(get("model.retries")), timeout=float(get("model.timeout")),
        temperature=get("model.temperature"), options=options, quirks=get("model.quirks"),
    )
    loop = AgentLoop(
        model=model, toolbox=Executor(registry, ctx),
        approve=make_approver(get("permissions") or {}, assume_yes=assume_yes),
        max_steps=int(get("limits.max_steps")), max_parallel_tools=int(get("limits.max_parallel_tools")),
        cancel=ctx.cancel, on_event=on_event,
    )
    messages = [{"role": "system", "content": system_prompt(effective, ctx.workspace)}]
    return Agent(loop, messages, registry)


@click.command("run")
@click.argument("task")
@agent_options
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line on stdout (tool_call, tool_result, message, final, error…).")
@handle_errors
def run(task: str, as_json: bool, **options: Any) -> None:
    """Run one TASK to completion. The answer goes to stdout, progress to stderr.

    Exit codes: 0 answered, 1 error, 2 usage or config error, 3 step limit reached, 130 interrupted.
    """
    from nami_yaml.cli.render import HumanRenderer, JsonRenderer

    renderer = JsonRenderer() if as_json else HumanRenderer()
    try:
        agent = build_agent(on_event=renderer, **options)
    except NamiError as exc:
        if as_json:  # a reader of the event stream learns why it is empty
            click.echo(json.dumps({"type": "error", "message": str(exc)}))
        raise
    agent.messages.append({"role": "user", "content": task})
    outcome = agent.loop.run(agent.messages)
    if outcome.status == "answered":
        renderer.answer(outcome.final_text)
        if outcome.error and not as_json:
            click.echo(f"nami: {outcome.error}", err=True)
    elif not as_json and outcome.status != "error":  # model errors were already shown by the renderer
        click.echo(f"nami: {outcome.error}", err=True)
    sys.exit(STATUS_EXIT[outcome.status])


CHAT_HELP = """\
Commands:
  /help     this help
  /tools    the tools the agent has
  /clear    forget the conversation (keeps the system prompt)
  exit, quit or Ctrl-D to leave; Ctrl-C stops a running turn"""


@click.command("chat")
@agent_options
@handle_errors
def chat(**options: Any) -> None:
    """Talk with the agent; the conversation carries across turns."""
    from nami_yaml.cli.lineinput import LineReader
    from nami_yaml.cli.render import HumanRenderer

    renderer = HumanRenderer(live_stdout=True)
    agent = build_agent(on_event=renderer, **options)
    system = list(agent.messages)
    reader = LineReader()
    try:
        if reader.interactive:
            click.echo(f"nami chat: {len(agent.registry)} tools. /help for commands, Ctrl-D to leave.", err=True)
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
                    click.echo(f"{tool.name:<16} {tool.risk:<5} {first_sentence(tool.description)}")
                continue
            if text == "/clear":
                agent.messages[:] = list(system)
                click.echo("(conversation cleared)", err=True)
                continue
            if text.startswith("/"):
                click.echo(f"unknown command {text.split()[0]}; /help lists them", err=True)
                continue
            agent.messages.append({"role": "user", "content": text})
            outcome = agent.loop.run(agent.messages)
            if outcome.status == "answered":
                renderer.answer(outcome.final_text)
            elif outcome.status == "interrupted":
                click.echo("(interrupted)", err=True)
            elif outcome.status != "error":
                click.echo(f"nami: {outcome.error}", err=True)
    finally:
        reader.close()
