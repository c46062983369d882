"""The ``nami`` command. Sub-commands live in their own modules; heavy imports happen inside them."""

from __future__ import annotations

import sys

import click

from nami_yaml import __version__
from nami_yaml.cli.inspect import check, schema, show_config, trust
from nami_yaml.cli.tools import tools_group


class LazyGroup(click.Group):
    """``run`` and ``chat`` pull in the agent and model modules only when used."""

    lazy = {"run": ("nami_yaml.cli.run", "run"), "chat": ("nami_yaml.cli.run", "chat")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            import importlib

            module, attribute = self.lazy[name]
            return getattr(importlib.import_module(module), attribute)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nami")
def cli() -> None:
    """nami: a declarative, YAML-configured LLM agent.

    Tools are YAML files; agent.yaml says which model and tools to use.
    Start with `nami check`, `nami tools list`, then `nami run "TASK"` or `nami chat`.
    """


cli.add_command(check)
cli.add_command(schema)
cli.add_command(show_config)
cli.add_command(tools_group)
cli.add_command(trust)


def keep_environment_private() -> None:
    """Make /proc/<nami>/environ unreadable to the processes nami starts (Linux).

    Tools never get the model's API key in their own environment, but without this any of them could
    read it from their parent: ``cat /proc/$PPID/environ``. A non-dumpable process's /proc files belong
    to root. Children are dumpable again after exec, so tools themselves are unaffected.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def main() -> None:
    keep_environment_private()
    cli(prog_name="nami")
