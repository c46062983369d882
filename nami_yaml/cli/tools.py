"""``nami tools list|show|call``: see and run tools by hand, through the executor the loop uses."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from nami_yaml.app.project import Project, open_project
from nami_yaml.cli.approve import terminal_approver
from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    config_option,
    fail,
    handle_errors,
    prompt_trust,
    report_notices,
    report_sandbox_notice,
    tools_option,
)
from nami_yaml.cli.completion import complete_library_groups, complete_tool_names
from nami_yaml.display import command_line, safe_json, visible, visible_line
from nami_yaml.env_secrets import NON_INTERACTIVE_ENV
from nami_yaml.errors import SpecError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.library import LIBRARY_ROOT, LibraryGroup, library_catalog
from nami_yaml.registry.overview import runner_overview
from nami_yaml.registry.tool import Tool
from nami_yaml.result import ToolResult
from nami_yaml.runners.mcp import McpRunner
from nami_yaml.runners.sandbox.describe import sandbox_line
from nami_yaml.runtime import ToolSettings


@click.group("tools")
def tools_group() -> None:
    """List, inspect and run tools."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array with every tool.")
@config_option
@tools_option
@handle_errors
def list_tools(as_json: bool, config: str | None, extra_tools: tuple[str, ...]) -> None:
    """List the tools the agent has, in the order the model sees them (MCP servers' tools too, once this
    agent.yaml is trusted: listing them starts the servers)."""
    with open_project(ProjectRequest(config=config, tools=tuple(extra_tools)), trust=prompt_trust,
                      tool_servers=True) as project:
        report_notices(project)
        print_tools(project, as_json)


def print_tools(project: Project, as_json: bool) -> None:
    registry = project.registry
    if as_json:
        rows = [{"name": t.name, "risk": t.risk, "runner": t.runner.kind, "builtin": t.builtin,
                 "source": t.source, "description": t.description, "parameters": t.parameters,
                 "group": t.group, "on_demand": registry.is_on_demand(t),
                 **({"server": t.runner.server} if isinstance(t.runner, McpRunner) else {})} for t in registry]
        click.echo(safe_json(rows, indent=2))
        return
    width = max((len(t.name) for t in registry), default=4)
    for tool in registry:
        summary = first_sentence(tool.description)
        origin = "built-in" if tool.builtin else tool.source
        if isinstance(tool.runner, McpRunner):
            origin = f"MCP server {tool.runner.server}"
        if registry.is_on_demand(tool):
            origin += f"; sent once the model loads {tool.group}"
        click.echo(visible(f"{tool.name:<{width}}  {tool.risk:<5}  {summary}  [{origin}]"))


@tools_group.command("show")
@click.argument("name", shell_complete=complete_tool_names)
@click.option("--json", "as_json", is_flag=True, help="Print only the exact definition sent to the model, as JSON.")
@config_option
@tools_option
@handle_errors
def show_tool(name: str, as_json: bool, config: str | None, extra_tools: tuple[str, ...]) -> None:
    """Show how NAME runs (runner, timeout, cwd, environment, risk) and the definition sent to the model."""
    with open_project(ProjectRequest(config=config, tools=tuple(extra_tools)), trust=prompt_trust,
                      tool_servers=True) as project:
        report_notices(project)
        show_one(project, name, as_json)


def show_one(project: Project, name: str, as_json: bool) -> None:
    registry, ctx = project.registry, project.context
    tool = registry.get(name)
    if tool is None:
        fail(f"nami: {registry.unknown(name)}", EXIT_USAGE)
    definition = safe_json(tool.definition(), indent=2)
    if as_json:
        click.echo(definition)
        return
    for line in describe_tool(tool, ctx.settings):
        click.echo(visible(line))
    click.echo("definition sent to the model:")
    click.echo(definition)


@tools_group.command("call")
@click.argument("name", shell_complete=complete_tool_names)
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--args-json", metavar="JSON", help="All arguments as one JSON object (KEY=VALUE pairs are added on top).")
@click.option("--dry-run", is_flag=True, help="Show what would run (argv, cwd, stdin, environment changes) and the decision, without running.")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Approve it if a rule asks (never a deny).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the whole result as JSON (ok, content, details, exit code, saved output).")
@click.option("--verbose", "-v", is_flag=True,
              help="With --dry-run: every variable set, also those every tool gets (PAGER=cat, …).")
@config_option
@tools_option
@handle_errors
def call_tool(name: str, assignments: tuple[str, ...], args_json: str | None, dry_run: bool, assume_yes: bool,
              as_json: bool, verbose: bool, config: str | None, extra_tools: tuple[str, ...]) -> None:
    """Run tool NAME by hand: its stdout to stdout, its stderr and nami's notes to stderr.

    Exit code 0 when the tool succeeded, 1 when it failed or was refused. The rules of agent.yaml and your
    user config decide as they do for the model: a deny refuses, a rule that asks asks you (or --yes). The
    per-risk defaults (permissions) do not ask: you are the one calling. Every call is recorded in the
    audit log.
    """
    with open_project(ProjectRequest(config=config, tools=tuple(extra_tools)), trust=prompt_trust,
                      will_run=not dry_run, tool_servers=True) as project:
        report_notices(project)
        call_one(project, name, assignments, args_json, dry_run, assume_yes, as_json, verbose)


def call_one(project: Project, name: str, assignments: tuple[str, ...], args_json: str | None, dry_run: bool,
             assume_yes: bool, as_json: bool, verbose: bool = False) -> None:
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
        show_dry_run(project, name, arguments, as_json, verbose)
        return
    from nami_yaml.app.manual import by_hand_guards, call_by_hand

    report_sandbox_notice(project)
    guards = by_hand_guards(project, terminal_approver(), assume_yes=assume_yes)
    result = call_by_hand(project.executor(), guards, name, arguments).result
    if as_json:
        click.echo(safe_json(result_json(result), indent=2))
    else:
        print_result(result)
    raise SystemExit(EXIT_OK if result.ok else EXIT_ERROR)


def show_dry_run(project: Project, name: str, arguments: dict[str, Any], as_json: bool, verbose: bool = False) -> None:
    prepared = project.executor().prepare(name, arguments)
    if not isinstance(prepared, PreparedToolCall):
        click.echo(visible(prepared.content), err=True)
        raise SystemExit(EXIT_ERROR)
    from nami_yaml.app.manual import would_decide

    decision = would_decide(project, prepared)
    if as_json:
        click.echo(safe_json({"tool": prepared.name, "risk": prepared.risk, "plan": prepared.plan(),
                              "decision": decision}, indent=2))
        return
    click.echo(format_plan(prepared, verbose=verbose))
    click.echo(visible(f"decision: {decision}"))


@tools_group.command("library")
@click.argument("groups", nargs=-1, metavar="[GROUP]...", shell_complete=complete_library_groups)
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the library's folder and every group.")
@handle_errors
def library(groups: tuple[str, ...], as_json: bool) -> None:
    """List nami's ops tool library (or some GROUPs of it): each group, the program it needs, and its tools.

    Use them in agent.yaml by group or by file: tools: {library: [git, kubectl/logs]}.
    """
    catalog, problems = library_catalog(search_path=os.environ.get("PATH"))
    if problems:
        raise SpecError(problems)
    unknown = [name for name in groups if name not in {group.name for group in catalog}]
    if unknown:
        fail(f"nami: unknown library group {unknown[0]!r}; the library has: {', '.join(g.name for g in catalog)}",
             EXIT_USAGE)
    shown = [group for group in catalog if not groups or group.name in groups]
    if as_json:
        click.echo(safe_json({"root": str(LIBRARY_ROOT), "groups": [_group_json(g) for g in shown]},
                             indent=2))
        return
    click.echo(f"nami's tool library ({LIBRARY_ROOT})")
    click.echo("Use it in agent.yaml by group or by file:  tools: {library: [git, kubectl/logs]}")
    width = max((len(t.name) for group in shown for t in group.tools), default=4)
    for group in shown:
        needs = ", ".join(f"{p} (not on PATH)" if p in group.missing else p for p in group.programs)
        count = f"{len(group.tools)} tool{'s' if len(group.tools) != 1 else ''}"
        click.echo(f"\n{group.name}: {count}; runs {needs}")
        for tool, file in zip(group.tools, group.files, strict=True):
            click.echo(f"  {tool.name:<{width}}  {tool.risk:<5}  {first_sentence(tool.description, 70)}  "
                       f"[{group.name}/{file.stem}]")


def _group_json(group: LibraryGroup) -> dict[str, Any]:
    return {"name": group.name, "programs": group.programs, "missing": group.missing,
            "tools": [{"name": tool.name, "risk": tool.risk, "select": f"{group.name}/{file.stem}",
                       "file": str(file), "description": tool.description}
                      for tool, file in zip(group.tools, group.files, strict=True)]}


def result_json(result: ToolResult) -> dict[str, Any]:
    return {"ok": result.ok, "content": result.content, "details": result.details,
            "exit_code": result.details.get("exit_code"), "saved_output": result.details.get("spill_path")}


def print_result(result: ToolResult) -> None:
    """A process tool's streams where they belong; any other result to stdout, or stderr when it failed.
    On a terminal, control characters are shown escaped: the output of a repository's tool, or a fetched
    page, must not drive the terminal. Redirected, the bytes stay as the tool wrote them."""
    streams = result.streams
    if streams is None:
        _echo(result.content, err=not result.ok)
        return
    if streams.stdout:
        _echo(streams.stdout, nl=False)
    if streams.stderr:
        _echo(streams.stderr, nl=False, err=True)
    for line in streams.status:
        _echo(line, err=True)


def _echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    stream = sys.stderr if err else sys.stdout
    if stream.isatty():
        click.echo(visible(text), err=err, nl=nl)
    else:  # color=True: click would otherwise strip what looks like a color code from the tool's output
        click.echo(text, err=err, nl=nl, color=True)


def describe_tool(tool: Tool, defaults: ToolSettings) -> list[str]:
    """How a tool runs, one setting a line, for `nami tools show`."""
    info = runner_overview(tool)
    lines = [f"name:       {tool.name}", f"risk:       {tool.risk}",
             f"source:     {'built-in' if tool.builtin else tool.source}", f"runner:     {info['runner']}"]
    if tool.targets is not None:
        where = f"pinned to {tool.targets.pinned}" if tool.targets.pinned else "the model chooses" + (
            f", default {tool.targets.default}" if tool.targets.default else "")
        lines.append(f"targets:    {', '.join(tool.targets.names())} ({where})")
    if "argv" in info:
        lines.append(f"argv:       {json.dumps(info['argv'], ensure_ascii=False)}")
    for index, stage in enumerate(info.get("pipeline", ())):
        lines.append(f"{'pipeline:' if index == 0 else '':<10}  {'| ' if index else ''}"
                     f"{json.dumps(stage, ensure_ascii=False)}")
    for name, table in info.get("map", {}).items():
        lines.append(f"map:        {{{name}}}: " + ", ".join(f"{value} -> {json.dumps(items, ensure_ascii=False)}"
                                                             for value, items in table.items()))
    if "script" in info:
        lines.append("script:")
        lines.extend(f"  | {line}" for line in info["script"].rstrip("\n").splitlines())
    if "entrypoint" in info:
        lines.append(f"entrypoint: {info['entrypoint']}")
    if "server" in info:
        lines.append(f"server:     {info['server']} ({info['endpoint']}), its tool {info['server_tool']}")
        timeout = info["tool_timeout"]
        lines.append(f"timeout:    {timeout:g} s" if timeout else f"timeout:    {defaults.default_timeout:g} s (default)")
    if "timeout" in info:
        timeout = info["timeout"]
        lines.append(f"timeout:    {timeout:g} s" if timeout else f"timeout:    {defaults.default_timeout:g} s (default)")
        lines.append(f"cwd:        {info['cwd'] or '.'} (in the workspace)")
        lines.extend(f"env:        {key}={value}" for key, value in info["env"].items())
        if info["env_passthrough"]:
            lines.append(f"env_passthrough: {', '.join(info['env_passthrough'])}")
        if info["stdin"] is not None:
            lines.append(f"stdin:      {json.dumps(info['stdin'], ensure_ascii=False)}")
    if info.get("allow_dash"):
        lines.append(f"allow_dash: {', '.join(info['allow_dash'])}")
    if info.get("docs_command"):
        lines.append(f"docs:       {json.dumps(info['docs_command'], ensure_ascii=False)} "
                     "(run when the model reads the docs, without asking)")
    limit = info.get("max_output")
    lines.append(f"max_output: {limit:,} bytes" if limit else f"max_output: {defaults.max_output:,} bytes (default)")
    shape = tool.output
    if shape is not None and shape.format != "text":
        parts = [f"read as {shape.format}", *([f"select {shape.select}"] if shape.select else []),
                 *([f"max_items {shape.max_items:,}"] if shape.max_items else []),
                 *(["schema for MCP clients"] if shape.schema is not None else [])]
        lines.append(f"output:     {'; '.join(parts)} (the whole output saved when shaping leaves something out)")
    return lines


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


def format_plan(prepared: PreparedToolCall, *, verbose: bool = False) -> str:
    """What would run, every field escaped as in approval prompts: a tool from an untrusted repository
    must not hide its real command behind terminal escapes (``\\e[2K\\r`` erases the line before it).
    The variables every tool gets (NON_INTERACTIVE_ENV) are one line unless ``verbose``; the tool's own
    are each shown."""
    plan = prepared.plan()
    lines = [f"tool:    {prepared.name} (risk: {prepared.risk})"]
    if "argv" in plan:
        label = "pipeline:" if prepared.kind == "pipeline" else "argv:   "  # (a pipeline's argv is nami's launcher)
        lines.append(f"{label} {visible_line(command_line(plan))}")
        lines.append(f"cwd:     {visible_line(plan['cwd'])}")
        lines.append(f"timeout: {plan['timeout']:g} s")
        if plan["stdin"] is None:
            lines.append("stdin:   (closed)")
        else:
            lines.append("stdin:")
            lines.extend(f"  | {visible_line(line)}" for line in plan["stdin"].split("\n"))
        fixed = {k: v for k, v in plan["env_set"].items() if NON_INTERACTIVE_ENV.get(k) == v}
        for key, value in plan["env_set"].items():
            if key in fixed and not verbose:
                continue
            shown = value if len(value) <= 200 else value[:200] + "…"
            lines.append(f"env set: {visible_line(key)}={visible_line(shown)}")
        if fixed and not verbose:
            sample = ", ".join(f"{k}={v}" for k, v in list(fixed.items())[:3])
            lines.append(f"env set: {sample} and {len(fixed) - 3} more that every tool gets, so none waits for a "
                         "person (-v lists them)" if len(fixed) > 3 else f"env set: {sample}")
        if plan["env_removed"]:
            lines.append(f"env removed: {visible_line(', '.join(plan['env_removed']))}")
        _sandbox_line(plan, lines)
    elif "mcp_server" in plan:
        where = f"{plan['mcp_tool']} on MCP server {plan['mcp_server']} ({plan['endpoint']})"
        lines.append(f"calls:   {visible_line(where)}")
        lines.append(f"with:    {visible_line(safe_json(plan['arguments']))}")
        lines.append(f"timeout: {plan['timeout']:g} s")
    else:
        lines.append(f"calls:   {visible_line(plan['entrypoint'])}")
        lines.append(f"with:    {visible_line(safe_json(plan['arguments']))}")
        _sandbox_line(plan, lines)
    return "\n".join(lines)


def _sandbox_line(plan: dict[str, Any], lines: list[str]) -> None:
    line = sandbox_line(plan)
    if line is not None:
        lines.append(visible_line(line))
