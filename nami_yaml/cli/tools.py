"""``nami tools list|show|call``: see and run tools by hand, through the executor the loop uses."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click

from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    config_option,
    fail,
    handle_errors,
    session,
    tools_option,
)
from nami_yaml.display import safe_json, visible, visible_line
from nami_yaml.registry.executor import Executor, PreparedCall
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
    _, registry, _ = session(config, extra_tools=list(extra_tools))
    if as_json:
        rows = [{"name": t.name, "risk": t.risk, "runner": t.runner.kind, "builtin": t.builtin,
                 "source": t.source, "description": t.description, "parameters": t.parameters} for t in registry]
        click.echo(safe_json(rows, indent=2))
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
    _, registry, _ = session(config, extra_tools=list(extra_tools))
    tool = registry.get(name)
    if tool is None:
        fail(f"nami: unknown tool '{name}'. Available tools: {', '.join(registry.names())}", EXIT_USAGE)
    click.echo(safe_json(tool.definition(), indent=2))


@tools_group.command("call")
@click.argument("name")
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--args-json", metavar="JSON", help="All arguments as one JSON object (KEY=VALUE pairs are added on top).")
@click.option("--dry-run", is_flag=True, help="Show what would run (argv, cwd, stdin, environment changes) without running.")
@config_option
@tools_option
@handle_errors
def call_tool(name: str, assignments: tuple[str, ...], args_json: str | None, dry_run: bool,
              config: str | None, extra_tools: tuple[str, ...]) -> None:
    """Run tool NAME by hand. Exit code 0 when the tool succeeded, 1 when it failed."""
    _, registry, ctx = session(config, extra_tools=list(extra_tools), will_run=not dry_run)
    tool = registry.get(name)
    if tool is None:
        fail(f"nami: unknown tool '{name}'. Available tools: {', '.join(registry.names())}", EXIT_USAGE)
    arguments: dict[str, Any] = {}
    if args_json is not None:
        try:
            arguments = json.loads(args_json)
        except json.JSONDecodeError as exc:
            fail(f"nami: --args-json is not valid JSON: {exc}", EXIT_USAGE)
        if not isinstance(arguments, dict):
            fail("nami: --args-json must be a JSON object", EXIT_USAGE)
    arguments.update(parse_assignments(tool, assignments))
    executor = Executor(registry, ctx)
    prepared = executor.prepare(name, arguments)
    if not isinstance(prepared, PreparedCall):
        click.echo(visible(prepared.content))
        raise SystemExit(EXIT_ERROR)
    if dry_run:
        click.echo(format_plan(prepared))
        return
    result = prepared.run()
    click.echo(visible(result.content))  # output of a repository's tool, or a fetched page: nothing live
    raise SystemExit(EXIT_OK if result.ok else EXIT_ERROR)


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


def format_plan(prepared: PreparedCall) -> str:
    """What would run, every field escaped as in approval prompts: a tool from an untrusted repository
    must not hide its real command behind terminal escapes (``\\e[2K\\r`` erases the line before it)."""
    plan = prepared.plan()
    lines = [f"tool:    {prepared.name} (risk: {prepared.risk})"]
    if "argv" in plan:
        lines.append(f"argv:    {visible_line(shlex.join(plan['argv']))}")
        lines.append(f"cwd:     {visible_line(plan['cwd'])}")
        lines.append(f"timeout: {plan['timeout']:g} s")
        if plan["stdin"] is None:
            lines.append("stdin:   (closed)")
        else:
            lines.append("stdin:")
            lines.extend(f"  | {visible_line(line)}" for line in plan["stdin"].split("\n"))
        for key, value in plan["env_set"].items():
            shown = value if len(value) <= 200 else value[:200] + "…"
            lines.append(f"env set: {visible_line(key)}={visible_line(shown)}")
        if plan["env_removed"]:
            lines.append(f"env removed: {visible_line(', '.join(plan['env_removed']))}")
    else:
        lines.append(f"calls:   {visible_line(plan['entrypoint'])}")
        lines.append(f"with:    {visible_line(safe_json(plan['arguments']))}")
    return "\n".join(lines)
