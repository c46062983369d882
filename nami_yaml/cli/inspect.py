"""``nami check``, ``nami schema`` and ``nami config``: validate and explain the configuration."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from nami_yaml.app.checking import check_project
from nami_yaml.app.trust_summary import trust_review
from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    config_option,
    confirm_or_show,
    fail,
    handle_errors,
    painted_summary,
    retrust_lines,
)
from nami_yaml.cli.style import terminal
from nami_yaml.config.files import find_config
from nami_yaml.config.settings import load_settings, mask
from nami_yaml.config.trust import remember
from nami_yaml.display import plural, safe_json, visible_line
from nami_yaml.errors import ERROR, ConfigError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.spec.validate import SCHEMA_NAMES, schema_text


@click.command("check")
@click.argument("paths", nargs=-1, metavar="[PATH]...", type=click.Path())
@config_option
@click.option("--strict", is_flag=True, help="Fail on warnings too (a program not on PATH, an unused parameter…).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: ok, counts and every problem (file, line, col, path, message, severity).")
@handle_errors
def check(paths: tuple[str, ...], config: str | None, strict: bool, as_json: bool) -> None:
    """Validate agent.yaml, every tool it loads, and any tool files or folders given as PATH (a batch task
    file given as PATH, .jsonl or YAML with `tasks:`, is checked as one).

    Prints every problem as file:line:col: $.json.path: message and exits 1, or prints a one-line summary.
    Warnings (file:line:col: $.path: warning: message) are shown but fail only with --strict.
    """
    report = check_project(config, paths, search_path=os.environ.get("PATH"))
    if report.error is not None:
        effective = report.effective
        where = str(effective.config_path) if effective and effective.config_path else None
        if as_json:
            _print_json([{"file": where, "line": None, "col": None, "path": None, "message": str(report.error),
                          "severity": ERROR}], tools=None)
        else:
            click.echo(f"nami: {report.error}", err=True)
        raise SystemExit(EXIT_ERROR)
    errors, warnings = report.errors, report.warnings
    failed = errors > 0 or (strict and warnings > 0)
    if as_json:
        _print_json([p.as_dict() for p in report.problems], tools=None if errors else len(report.tools))
        raise SystemExit(EXIT_ERROR if failed else EXIT_OK)
    for problem in report.problems:
        click.echo(str(problem), err=True)
    if failed:
        counts = [plural(errors, "problem")] if errors else []
        counts += [plural(warnings, "warning")] if warnings else []
        click.echo(f"{' and '.join(counts)} found{' (--strict)' if not errors else ''}", err=True)
        raise SystemExit(EXIT_ERROR)
    click.echo(report.summary())


def _print_json(problems: list[dict[str, object]], tools: int | None) -> None:
    errors = sum(p["severity"] == ERROR for p in problems)
    click.echo(safe_json({"ok": errors == 0, "errors": errors, "warnings": len(problems) - errors,
                          "tools": tools, "problems": problems}, indent=2))


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
    effective = load_settings(ProjectRequest(config=config))
    path, how = find_config(config, os.environ, Path.cwd())
    rows: dict[str, dict[str, object]] = {}
    for dotted in sorted(effective.sources):
        rows[dotted] = {"value": effective.get(dotted), "source": effective.sources[dotted]}
    rows["model.api_key"] = {"value": mask(effective.api_key), "source": effective.api_key_source}
    # Rules are not merged: each file's keep their position (the user config's first).
    placed = [(file, index) for file in effective.files for index in range(len(file.data.get("rules") or []))]
    for number, (file, index) in enumerate(placed):
        line, col = file.doc.position(("rules", index))
        rows[f"rules[{number}]"] = {"value": file.data["rules"][index], "source": f"{file.path}:{line}:{col}"}
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
@click.option("--summary", "full", is_flag=True,
              help="Show the full summary, also when the project was trusted before (else only what changed).")
@handle_errors
def trust(config: str | None, assume_yes: bool, full: bool) -> None:
    """Trust this project's agent.yaml, its prompt, tool files and their Python files, as they are now.

    nami runs tools from an agent.yaml found in the current folder or above only once it is trusted; any
    change to those files asks again. Trusted before: what changed since (with every WARNING of the
    summary) is shown first, the full summary with --summary or by answering s.
    """
    effective = load_settings(ProjectRequest(config=config))
    if effective.config_path is None:
        raise ConfigError("no agent.yaml found here or above; nothing to trust")
    state, seen = trust_review(effective)
    paint = terminal().out
    retrust = bool(seen.changed) and not full
    lines = (retrust_lines(seen.changed, seen.overview, paint, "answer s, or run `nami trust --summary`")
             if retrust else painted_summary(seen.lines, paint))
    for line in lines:
        click.echo(line)
    if state.trusted:
        click.echo("already trusted")
        return
    if not assume_yes and not sys.stdin.isatty():
        above = "the changes above (`nami trust --summary` shows everything)" if retrust else "the summary above"
        fail(f"nami: no terminal to ask: run `nami trust --yes` after reading {above}", EXIT_USAGE)
    if not assume_yes:
        def show() -> None:
            for line in painted_summary(seen.overview, paint):
                click.echo(line)

        if not (confirm_or_show("Trust it?", show) if retrust else click.confirm("Trust it?", default=False)):
            raise SystemExit(EXIT_ERROR)
    remember(state)
    click.echo(f"trusted {state.config}")
