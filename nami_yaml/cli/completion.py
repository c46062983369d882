"""Shell completion (click's, for bash, zsh and fish): ``nami completion SHELL`` prints the script, and the
completers here offer tool names, library names and session ids.

Completion runs nami once per key press, so it must stay fast: sub-commands come from the static table in
cli/main.py, tool names from reading the YAML files without validating them, session ids from a folder
listing; nothing here imports openai.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import CompletionItem, get_completion_class

from nami_yaml.xdg import user_data_dir

SHELLS = ("bash", "zsh", "fish")
SESSION_SUFFIXES = (".jsonl", ".json")

INSTALL = {
    "bash": 'eval "$(nami completion bash)"          # in ~/.bashrc',
    "zsh": 'eval "$(nami completion zsh)"           # in ~/.zshrc, after compinit',
    "fish": "nami completion fish > ~/.config/fish/completions/nami.fish",
}


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash: eval "$(nami completion bash)"          # in ~/.bashrc
    zsh:  eval "$(nami completion zsh)"           # in ~/.zshrc, after compinit
    fish: nami completion fish > ~/.config/fish/completions/nami.fish
    """
    from nami_yaml.cli.main import cli

    shell_class = get_completion_class(shell)
    assert shell_class is not None  # the three shells click ships
    click.echo(shell_class(cli, {}, "nami", "_NAMI_COMPLETE").source())


def _matching(values: list[str], incomplete: str, help_text: str | None = None) -> list[CompletionItem]:
    return [CompletionItem(value, help=help_text) for value in values if value.startswith(incomplete)]


def complete_tool_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The tools the agent.yaml here (or --config) declares, built-ins included."""
    from nami_yaml.app.toolset import declared_tool_names
    from nami_yaml.config.settings import load_settings
    from nami_yaml.errors import NamiError
    from nami_yaml.project_request import ProjectRequest

    config = ctx.params.get("config")
    try:
        return _matching(declared_tool_names(load_settings(ProjectRequest(config=config))), incomplete)
    except (NamiError, OSError):
        return []  # a broken config completes nothing; `nami check` says why


def complete_library_groups(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from nami_yaml.registry.library import library_groups

    return _matching(list(library_groups()), incomplete)


def complete_library_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Groups and group/file names, as agent.yaml's tools.library and `nami init --library` take them."""
    from nami_yaml.registry.library import selectors

    return _matching(selectors(), incomplete)


def session_ids(folder: Path | None = None) -> list[str]:
    """Saved sessions, newest first: ``<id>.jsonl`` files (or ``<id>/`` folders) in nami's sessions folder.
    No folder yet (no session saved) means none."""
    folder = folder or user_data_dir() / "sessions"
    try:
        entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
    except OSError:
        return []
    found: list[tuple[float, str]] = []
    for entry in entries:
        try:
            if entry.is_dir():
                found.append((entry.stat().st_mtime, entry.name))
            elif entry.name.endswith(SESSION_SUFFIXES):
                found.append((entry.stat().st_mtime, entry.name.rsplit(".", 1)[0]))
        except OSError:
            continue
    return [name for _, name in sorted(found, reverse=True)]


def complete_session_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """For options and arguments naming a saved session (``--resume ID``, ``nami sessions show ID``)."""
    return _matching(session_ids(), incomplete)
