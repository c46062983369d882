"""The ``nami`` command. Sub-commands live in their own modules; heavy imports happen inside them."""

from __future__ import annotations

import contextlib
import gc
import signal

import click

from nami_yaml.privacy import keep_environment_private
from nami_yaml.version import __version__

# name -> (module, attribute, one-line help). Sub-commands are imported only when used, so `nami --help`
# loads click and nothing else (the loader, jsonschema, openai stay out); tests check the help lines match.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "agents": ("nami_yaml.cli.agents", "agents", "List this project's named agents, their tools and rights."),
    "approvals": ("nami_yaml.cli.approvals", "approvals_group",
                  "List the calls waiting for approval; approve or deny them."),
    "batch": ("nami_yaml.cli.batch", "batch_group", "Run many tasks at once, each in a fresh workspace, checked."),
    "chat": ("nami_yaml.cli.chat", "chat", "Talk with the agent; the conversation carries across turns."),
    "check": ("nami_yaml.cli.inspect", "check", "Validate agent.yaml, its tools and any tool files given."),
    "completion": ("nami_yaml.cli.completion", "completion", "Print the shell completion script (bash, zsh, fish)."),
    "config": ("nami_yaml.cli.inspect", "show_config", "Show the effective configuration and its sources."),
    "context": ("nami_yaml.cli.context", "context", "Show what each request sends: the prompt and tools, in tokens."),
    "doctor": ("nami_yaml.cli.doctor", "doctor", "Check this setup: config, key, endpoint, model, programs."),
    "import": ("nami_yaml.cli.imports", "import_group", "Import other agents' tools or a CLI's help as tool files."),
    "init": ("nami_yaml.cli.init", "init", "Start a project: agent.yaml, an example tool, editor schemas."),
    "log": ("nami_yaml.cli.log", "log", "Show the audit log: each tool call, who decided it, what it did."),
    "mcp": ("nami_yaml.cli.mcp", "mcp_group", "Serve nami's tools to other agents over MCP (nami mcp serve)."),
    "policy": ("nami_yaml.cli.policy", "policy_group", "Check the permission rules before a model meets them."),
    "replay": ("nami_yaml.cli.replay", "replay", "Re-run a session's turns, tools answered from the recording."),
    "run": ("nami_yaml.cli.run", "run", "Run one TASK to completion."),
    "schema": ("nami_yaml.cli.inspect", "schema", "Print the published JSON Schema of a tool file or agent.yaml."),
    "sessions": ("nami_yaml.cli.sessions", "sessions_group", "List, show and export saved sessions."),
    "tools": ("nami_yaml.cli.tools", "tools_group", "List, inspect and run tools."),
    "trust": ("nami_yaml.cli.inspect", "trust", "Trust this project's agent.yaml and its tools as they are now."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        import importlib

        module, attribute, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, help_line) for name, (_, _, help_line) in sorted(COMMANDS.items())])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nami")
def cli() -> None:
    """nami: a declarative, YAML-configured LLM agent.

    Tools are YAML files; agent.yaml says which model and tools to use.
    Start with `nami check`, `nami tools list`, then `nami run "TASK"` or `nami chat`.
    """


def stop_on_sigterm() -> None:
    """SIGTERM ends nami as Ctrl-C does. Tools and MCP servers run in sessions of their own, so the signal
    never reaches them: without this, nami would die and leave them running."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError, OSError):  # not the main thread (nami embedded somewhere)
        signal.signal(signal.SIGTERM, interrupt)


def main() -> None:
    keep_environment_private()
    stop_on_sigterm()
    try:
        cli(prog_name="nami")
    finally:
        # Python's exit ends with a garbage collection that walks every object still tracked: after a run,
        # the openai SDK's classes and the project's tools, 0.1-0.2 s of CPU (seconds on a loaded machine)
        # between the answer and the exit. Frozen, they are left to the operating system; exit handlers
        # (atexit, weakref.finalize) still run, and nothing nami keeps needs collecting to be written.
        gc.freeze()
