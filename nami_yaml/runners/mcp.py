"""Tools of MCP servers (agent.yaml ``mcp_servers:``) behind the same Runner/Invocation protocol as YAML tools,
so the executor, the policy, approval, dry run and the audit log treat them alike.

The runner knows nothing of the MCP SDK: it hands the call to an :class:`McpCaller` (the connection manager
in ``nami_yaml.mcp.client``) and caps what comes back exactly as a Python tool's output is capped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from nami_yaml.cancel import CancelToken
from nami_yaml.display import summarize_arguments
from nami_yaml.result import ToolResult
from nami_yaml.runners.output import truncate_text
from nami_yaml.runtime import RuntimeContext


@dataclass
class McpReply:
    """What a server answered, as text for the model, and how the call ended."""

    text: str
    ok: bool = True
    timed_out: bool = False
    interrupted: bool = False
    unavailable: bool = False  # the server is not running: nothing was sent to it
    details: dict[str, Any] = field(default_factory=dict)


class McpCaller(Protocol):
    def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *, timeout: float,
                  cancel: CancelToken, trace: Mapping[str, str] | None = None,
                  progress: Callable[[str], None] | None = None) -> McpReply:
        """Call ``tool`` on ``server``; never raises; returns early (the call cancelled on the server) once
        ``cancel`` is set or ``timeout`` seconds have passed. ``trace``: the call's trace context (W3C
        ``traceparent``), sent with the request when runs are traced. ``progress``: told each progress
        notification of the call, as a line for people."""
        ...

    def read_resource(self, server: str, arguments: dict[str, Any], *, timeout: float,
                      cancel: CancelToken) -> McpReply:
        """Read the resource ``arguments["uri"]`` of ``server``, or list its resources; as ``call_tool``."""
        ...


@dataclass(frozen=True)
class McpRunner:
    server: str
    tool: str  # the tool's name on the server (nami's is server__tool)
    caller: McpCaller = field(compare=False, repr=False)
    endpoint: str = ""  # the command line or URL, for people
    timeout: float | None = None  # None: limits.tool_timeout
    action: str = "call"  # or "read_resource": the server's resources, read or listed (SERVER__read_resource)

    kind = "mcp"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> McpInvocation:
        return McpInvocation(tool, self, args, ctx)


@dataclass
class McpInvocation:
    tool: str
    runner: McpRunner
    args: dict[str, Any]
    ctx: RuntimeContext
    kind = "mcp"

    @property
    def timeout(self) -> float:
        return self.runner.timeout or self.ctx.settings.default_timeout

    def describe(self) -> str:
        return f"{self.tool} {summarize_arguments(self.args)}".rstrip()

    def plan(self) -> dict[str, Any]:
        return {"mcp_server": self.runner.server, "mcp_tool": self.runner.tool, "endpoint": self.runner.endpoint,
                "arguments": self.args, "timeout": self.timeout}

    def run(self) -> ToolResult:
        caller, server = self.runner.caller, self.runner.server
        if self.runner.action == "read_resource":
            reply = caller.read_resource(server, self.args, timeout=self.timeout, cancel=self.ctx.cancel)
        else:
            reply = caller.call_tool(server, self.runner.tool, self.args, timeout=self.timeout, cancel=self.ctx.cancel,
                                     trace=self.ctx.trace, progress=self.ctx.progress)
        details: dict[str, Any] = {"mcp_server": self.runner.server, **reply.details}
        for flag in ("timed_out", "interrupted", "unavailable"):
            if getattr(reply, flag):
                details[flag] = True
        content = reply.text
        if len(content) > self.ctx.settings.max_output:
            content, spill = truncate_text(content, self.ctx.settings.max_output, self.ctx.spill_dir,
                                           self.ctx.settings.max_saved_output)
            details["truncated"] = True
            details["spill_path"] = str(spill) if spill else None
        return ToolResult(content, ok=reply.ok and not (reply.timed_out or reply.interrupted), details=details)
