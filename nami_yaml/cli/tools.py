"""``nami tools list|show|call``: see and run tools by hand, through the executor the loop uses."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click

from nami_yaml.app.project import Project
from nami_yaml.cli.approve import terminal_approver
from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    config_option,
    fail,
    handle_errors,
    load_project,
    tools_option,
)
from nami_yaml.display import visible
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.tool import Tool


@click.group("tools")
def tools_group() -> None:
    """List, inspect and run tools."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array with every tool.")
@config_option
@tools_option
@handle_errors
def list_tools(as_json: bool, config: str | None, extra_tools: tuple[str, ...]) -> None:
    """List the tools the agent has, in the order the model sees them."""
    registry = load_project(config, extra_tools=list(extra_tools)).registry
    if as_json:
        rows = [{"name": t.name, "risk": t.risk, "runner": t.runner.kind, "builtin": t.builtin,
                 "source": t.source, "description": t.description, "parameters": t.parameters} for t in registry]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    width = max((len(t.name) for t in registry), default=4)
    for tool in registry:
        summary = first_sentence(tool.description)
        origin = "built-in" if tool.builtin else tool.source
        click.echo(visible(f"{tool.name:<{width}}  {tool.risk:<5}  {summary}  [{origin}]"))


@tools_group.command("show")
@click.argument("name")
@config_option
@tools_option
@handle_errors
def show_tool(name: str, config: str | None, extra_tools: tuple[str, ...]) -> None:
    """Print the exact definition sent to the model for NAME."""
    registry = load_project(config, extra_tools=list(extra_tools)).registry
    tool = registry.get(name)
    if tool is None:
        fail(f"nami: {registry.unknown(name)}", EXIT_USAGE)
    click.echo(json.dumps(tool.definition(), indent=2, ensure_ascii=False))


@tools_group.command("call")
@click.argument("name")
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--args-json", metavar="JSON", help="All arguments as one JSON object (KEY=VALUE pairs are added on top).")
@click.option("--dry-run", is_flag=True, help="Show what would run (argv, cwd, stdin, environment changes) and the decision, without running.")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Approve it if a rule asks (never a deny).")
@config_option
@tools_option
@handle_errors
def call_tool(name: str, assignments: tuple[str, ...], args_json: str | None, dry_run: bool, assume_yes: bool,
              config: str | None, extra_tools: tuple[str, ...]) -> None:
    """Run tool NAME by hand. Exit code 0 when the tool succeeded, 1 when it failed or was refused.

    The rules of agent.yaml and your user config decide as they do for the model: a deny refuses, a rule
    that asks asks you (or --yes). The per-risk defaults (permissions) do not ask: you are the one calling.
    Every call is recorded in the audit log.
    """
    project = load_project(config, extra_tools=list(extra_tools), will_run=not dry_run)
    registry = project.registry
    tool = registry.get(name)
    if tool is None:
        fail(f"nami: {registry.unknown(name)}", EXIT_USAGE)
    arguments: dict[str, Any] = {}
    if args_json is not None:
        try:
            arguments = json.loads(args_json)
        except json.JSONDecodeError as exc:
            fail(f"nami: --args-json is not valid JSON: {exc}", EXIT_USAGE)
        if not isinstance(arguments, dict):
            fail("nami: --args-json must be a JSON object", EXIT_USAGE)
    arguments.update(parse_assignments(tool, assignments))
    if dry_run:
        show_dry_run(project, name, arguments)
        return
    from nami_yaml.app.manual import call_by_hand

    outcome = call_by_hand(project, name, arguments, approve=terminal_approver(), assume_yes=assume_yes)
    click.echo(outcome.result.content)
    raise SystemExit(EXIT_OK if outcome.result.ok else EXIT_ERROR)


def show_dry_run(project: Project, name: str, arguments: dict[str, Any]) -> None:
    prepared = project.executor().prepare(name, arguments)
    if not isinstance(prepared, PreparedToolCall):
        click.echo(prepared.content)
        raise SystemExit(EXIT_ERROR)
    click.echo(format_plan(prepared))
    if not project.is_trusted():
        click.echo("decision: not evaluated (this agent.yaml is not trusted, so its rules and permissions are not read)")
        return
    from nami_yaml.app.safety import project_policy

    verdict = project_policy(project).decide(prepared)
    decision = verdict.decision
    by = decision.source or f"permissions.{prepared.risk}"
    if decision.action == "ask" and not verdict.by_rule:
        click.echo(f"decision: allow ({by} asks about the model's calls; calling it by hand is your yes)")
        return
    why = f": {decision.reason}" if decision.reason else ""
    click.echo(visible(f"decision: {decision.action} by {by}{why}"))


def first_sentence(description: str, limit: int = 80) -> str:
    text = " ".join(description.split())
    end = text.find(". ")
    text = text[: end + 1] if 0 < end < limit else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_assignments(tool: Tool | None, assignments: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs; values of non-string parameters are read as JSON (count=3, all=true, paths=["a"])."""
    properties = (tool.parameters.get("properties") or {}) if tool else {}
    values: dict[str, Any] = {}
    for item in assignments:
        key, sep, text = item.partition("=")
        if not sep or not key:
            fail(f"nami: expected KEY=VALUE, got {item!r}", EXIT_USAGE)
        declared = properties.get(key, {}).get("type") if isinstance(properties.get(key), dict) else None
        types = set(declared) if isinstance(declared, list) else {declared}
        if "string" in types and not types & {"integer", "number", "boolean", "array", "object"}:
            values[key] = text  # a string parameter (maybe nullable) takes the text as it is: x=123 is "123"
            continue
        try:
            values[key] = json.loads(text)
        except json.JSONDecodeError:
            values[key] = text
    return values


def format_plan(prepared: PreparedToolCall) -> str:
    plan = prepared.plan()
    lines = [f"tool:    {prepared.name} (risk: {prepared.risk})"]
    if "argv" in plan:
        lines.append(f"argv:    {shlex.join(plan['argv'])}")
        lines.append(f"cwd:     {plan['cwd']}")
        lines.append(f"timeout: {plan['timeout']:g} s")
        if plan["stdin"] is None:
            lines.append("stdin:   (closed)")
        else:
            lines.append("stdin:")
            lines.extend(f"  | {line}" for line in plan["stdin"].splitlines() or [""])
        for key, value in plan["env_set"].items():
            lines.append(f"env set: {key}={value if len(value) <= 200 else value[:200] + '…'}")
        if plan["env_removed"]:
            lines.append(f"env removed: {', '.join(plan['env_removed'])}")
    else:
        lines.append(f"calls:   {plan['entrypoint']}")
        lines.append(f"with:    {json.dumps(plan['arguments'], ensure_ascii=False)}")
    return "\n".join(lines)
