"""``nami check``, ``nami schema`` and ``nami config``: validate and explain the configuration."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import click

from nami_yaml.app.toolset import build_registry, check_toolset
from nami_yaml.app.trust_summary import summary
from nami_yaml.cli.common import EXIT_ERROR, EXIT_OK, config_option, handle_errors, painted_summary, settings
from nami_yaml.cli.style import terminal
from nami_yaml.config.files import find_config
from nami_yaml.config.mcp_servers import check_problems as mcp_check_problems
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.settings import mask
from nami_yaml.config.trust import remember, trust_state
from nami_yaml.display import safe_json, visible_line
from nami_yaml.errors import ERROR, ConfigError, Problem, SpecError
from nami_yaml.policy.layers import rule_problems
from nami_yaml.registry.draft import Host
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
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
    effective = None
    tools: list[Tool] = []
    task_files, tool_paths = _split_task_files(paths)
    tasks: dict[str, int] = {}
    try:
        effective = settings(config)
        host = Host(Path(effective.get("workspace") or Path.cwd()), os.environ.get("PATH"))
        tools, found = check_toolset(effective, tool_paths, host=host)
        if not any(p.is_error for p in found):
            # Rules are only read and compiled here: nothing is matched or run. MCP servers are not started.
            found = [*found, *rule_problems(effective, Registry(tools)), *mcp_check_problems(effective)]
        found = [*found, *_check_task_files(task_files, tasks)]
        problems = SpecError(found).problems  # sorted by file and position
    except SpecError as exc:
        problems = exc.problems
    except ConfigError as exc:
        where = str(effective.config_path) if effective and effective.config_path else None
        if as_json:
            _print_json([{"file": where, "line": None, "col": None, "path": None, "message": str(exc),
                          "severity": ERROR}], tools=None)
        else:
            click.echo(f"nami: {exc}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    errors = sum(p.is_error for p in problems)
    warnings = len(problems) - errors
    failed = errors > 0 or (strict and warnings > 0)
    if as_json:
        _print_json([p.as_dict() for p in problems], tools=None if errors else len(tools))
        raise SystemExit(EXIT_ERROR if failed else EXIT_OK)
    for problem in problems:
        click.echo(str(problem), err=True)
    if failed:
        counts = [_plural(errors, "problem")] if errors else []
        counts += [_plural(warnings, "warning")] if warnings else []
        click.echo(f"{' and '.join(counts)} found{' (--strict)' if not errors else ''}", err=True)
        raise SystemExit(EXIT_ERROR)
    assert effective is not None
    kinds = Counter("built-in" if t.builtin else t.runner.kind for t in tools)
    files = len({t.source.rsplit(":", 2)[0] for t in tools if not t.builtin})
    where = effective.config_path or "no agent.yaml (defaults)"
    detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    noted = f"; {_plural(warnings, 'warning')}" if warnings else ""
    servers = server_specs(effective)
    started = f"; {_plural(len(servers), 'MCP server')} (checked, not started)" if servers else ""
    batches = "".join(f"; {name}: {_plural(count, 'task')}" for name, count in tasks.items())
    click.echo(f"ok: {where}; {_plural(len(tools), 'tool')} ({detail or 'none'}) from "
               f"{_plural(files, 'tool file')}{started}{batches}{noted}")


def _split_task_files(paths: tuple[str, ...]) -> tuple[list[Path], list[str]]:
    """Batch task files apart from tool files and folders."""
    from nami_yaml.batch.tasks import is_task_file

    task_files = [Path(p) for p in paths if is_task_file(Path(p))]
    return task_files, [p for p in paths if Path(p) not in task_files]


def _check_task_files(files: list[Path], counts: dict[str, int]) -> list[Problem]:
    from nami_yaml.batch.tasks import check_task_file

    problems: list[Problem] = []
    for path in files:
        tasks, found = check_task_file(path)
        problems += found
        counts[str(path)] = len(tasks)
    return problems


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


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
    effective = settings(config)
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
    state = trust_state(effective)
    for line in painted_summary(summary(effective, registry), terminal().out):
        click.echo(line)
    if state.trusted:
        click.echo("already trusted")
        return
    if not assume_yes and not click.confirm("Trust it?", default=False):
        raise SystemExit(EXIT_ERROR)
    remember(state)
    click.echo(f"trusted {state.config}")
