"""How a tool runs, as plain data: for `nami tools show` and the trust summary (not sent to the model)."""

from __future__ import annotations

from typing import Any

from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.entrypoint import EntrypointRunner
from nami_yaml.runners.mcp import McpRunner
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.pipeline import PipelineRunner
from nami_yaml.runners.script import ScriptRunner
from nami_yaml.runners.template import is_element
from nami_yaml.sandbox_settings import SandboxNeeds


def runner_overview(tool: Tool) -> dict[str, Any]:
    """The runner (argv template, script or entry point) and its process settings, as written.

    ``None`` for a setting means "not set: the configured default applies"; ``env`` values are shown as
    written (``${HOME}``), never expanded, so no host value leaks into a listing.
    """
    runner = tool.runner
    info: dict[str, Any] = {"runner": runner.kind}
    options: ProcessOptions | None = None
    if isinstance(runner, (CommandRunner, PipelineRunner)):
        if isinstance(runner, PipelineRunner):
            info["pipeline"] = runner.stages
        else:
            info["argv"] = runner.argv
        info["allow_dash"] = sorted(runner.allow_dash)
        if runner.maps:
            info["map"] = {name: dict(table) for name, table in runner.maps.items()}
        options = runner.options
    elif isinstance(runner, ScriptRunner):
        info["script"] = runner.script
        options = runner.options
    elif isinstance(runner, EntrypointRunner):
        info["entrypoint"] = runner.target
        info["max_output"] = runner.max_output
    elif isinstance(runner, McpRunner):
        info.update(server=runner.server, server_tool=runner.tool, endpoint=runner.endpoint,
                    tool_timeout=runner.timeout)
    if options is not None:
        info.update(timeout=options.timeout, cwd=options.cwd, env=dict(options.env),
                    env_passthrough=list(options.env_passthrough), stdin=options.stdin,
                    max_output=options.max_output)
    needs = sandbox_needs(tool)
    if needs.declared:
        info["sandbox"] = needs.as_mapping()
    if tool.docs is not None and tool.docs.command is not None:
        # Run without asking whenever the model reads the docs (tool_docs is a read): review it as the tool.
        info["docs_command"] = list(tool.docs.command)
    return info


def sandbox_needs(tool: Tool) -> SandboxNeeds:
    """What the tool file's ``sandbox:`` asks for beyond the default sandbox (nothing for a built-in or an
    MCP tool: a server's own keys are its entry's)."""
    runner = tool.runner
    if isinstance(runner, (CommandRunner, PipelineRunner, ScriptRunner)):
        return runner.options.sandbox
    if isinstance(runner, EntrypointRunner) and runner.base_dir is not None:
        return runner.sandbox
    return SandboxNeeds()


def programs(tool: Tool) -> list[str]:
    """What the tool starts: its program, ``bash`` for a script, the Python function of an entry point."""
    runner = tool.runner
    if isinstance(runner, (CommandRunner, PipelineRunner)):
        return [str(argv[0]) for argv in _argvs(runner) if argv and is_element(argv[0])]
    if isinstance(runner, ScriptRunner):
        return ["bash (script)"]
    if isinstance(runner, EntrypointRunner):
        return [f"Python {runner.target}"]
    if isinstance(runner, McpRunner):
        return [f"MCP server {runner.server}"]
    return []


def executables(tool: Tool) -> list[str]:
    """The executables a tool needs: a command's program (as written: a name looked up on PATH, or a path),
    ``bash`` for a script; none for an entry point (it runs in nami) or a program chosen by a placeholder."""
    runner = tool.runner
    if isinstance(runner, (CommandRunner, PipelineRunner)):
        firsts = [argv[0] for argv in _argvs(runner) if argv]
        return list(dict.fromkeys(str(first) for first in firsts if is_element(first) and "{" not in str(first)))
    if isinstance(runner, ScriptRunner):
        return ["bash"]
    return []


def _argvs(runner: CommandRunner | PipelineRunner) -> list[list[Any]]:
    """A command's argv, or each stage of a pipeline."""
    return list(runner.stages) if isinstance(runner, PipelineRunner) else [runner.argv]
