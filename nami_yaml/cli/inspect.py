"""``nami check``, ``nami schema`` and ``nami config``: validate and explain the configuration."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import click

from nami_yaml.cli.common import EXIT_ERROR, config_option, handle_errors, settings
from nami_yaml.config.files import find_config
from nami_yaml.config.settings import mask
from nami_yaml.config.toolset import build_registry
from nami_yaml.config.trust import remember, summary, trust_state
from nami_yaml.display import safe_json, visible_line
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.spec.validate import SCHEMA_NAMES, schema_text


@click.command("check")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@config_option
@handle_errors
def check(paths: tuple[str, ...], config: str | None) -> None:
    """Validate agent.yaml, every tool it loads, and any tool files or folders given as PATH.

    Prints every problem as file:line:col: $.json.path: message and exits 1, or prints a one-line summary.
    """
    try:
        effective = settings(config)
        registry = build_registry(effective, list(paths))
    except SpecError as exc:
        click.echo(str(exc), err=True)
        count = len(exc.problems)
        click.echo(f"{count} problem{'s' if count != 1 else ''} found", err=True)
        raise SystemExit(EXIT_ERROR) from None
    except ConfigError as exc:
        click.echo(f"nami: {exc}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    kinds = Counter("built-in" if t.builtin else t.runner.kind for t in registry)
    files = len({t.source.rsplit(":", 2)[0] for t in registry if not t.builtin})
    where = effective.config_path or "no agent.yaml (defaults)"
    detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    click.echo(f"ok: {where}; {len(registry)} tool{'s' if len(registry) != 1 else ''} ({detail or 'none'}) from {files} tool file{'s' if files != 1 else ''}")


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMA_NAMES))
def schema(name: str) -> None:
    """Print the published JSON Schema (draft 2020-12) of a tool file or of agent.yaml."""
    click.echo(schema_text(name).rstrip())


@click.command("config")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print {key: {value, source}} as JSON.")
@handle_errors
def show_config(config: str | None, as_json: bool) -> None:
    """Show the effective configuration and where each value came from (keys masked)."""
    effective = settings(config)
    path, how = find_config(config, os.environ, Path.cwd())
    rows: dict[str, dict[str, object]] = {}
    for dotted in sorted(effective.sources):
        rows[dotted] = {"value": effective.get(dotted), "source": effective.sources[dotted]}
    rows["model.api_key"] = {"value": mask(effective.api_key), "source": effective.api_key_source}
    if as_json:
        click.echo(safe_json({"config_file": str(path) if path else None, "values": rows}, indent=2, default=str))
        return
    click.echo(visible_line(f"# config file: {path or '(none)'} ({how})"))
    width = max(len(k) for k in rows)
    for key, row in rows.items():
        click.echo(f"{key:<{width}} = {safe_json(row['value'], default=str)}    # {visible_line(str(row['source']))}")


@click.command("trust")
@config_option
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Trust without asking (after reading the summary).")
@handle_errors
def trust(config: str | None, assume_yes: bool) -> None:
    """Trust this project's agent.yaml, its prompt, tool files and their Python files, as they are now.

    nami runs tools from an agent.yaml found in the current folder or above only once it is trusted; any
    change to those files asks again.
    """
    effective = settings(config)
    if effective.config_path is None:
        raise ConfigError("no agent.yaml found here or above; nothing to trust")
    registry = build_registry(effective)
    state = trust_state(effective, registry)
    for line in summary(effective, registry):
        click.echo(line)
    if state.trusted:
        click.echo("already trusted")
        return
    if not assume_yes and not click.confirm("Trust it?", default=False):
        raise SystemExit(EXIT_ERROR)
    remember(state)
    click.echo(f"trusted {state.config}")
