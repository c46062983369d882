"""``nami mcp serve``: nami's tools over MCP, stdio or streamable HTTP, through the SDK's low-level server
(the tool set is the registry's, known only at run time).

Every call goes through :class:`nami_yaml.serve.serving.ServedTools` (the loop's executor, policy and audit
log); this module only speaks the protocol. A client's ``notifications/cancelled`` cancels the handler,
which cancels the call: its process group is killed before the handler returns.
"""

from __future__ import annotations

import asyncio
import hmac
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from nami_yaml.agent.hooks import Decision
from nami_yaml.errors import NamiError
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.registry.tool import Tool
from nami_yaml.result import ToolResult
from nami_yaml.serve.hosts import served_names
from nami_yaml.serve.serving import ServedCall, ServedTools, output_schema, question_text
from nami_yaml.serve.stdin import StdinLines
from nami_yaml.spec.validate import did_you_mean
from nami_yaml.version import __version__

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
CANCEL_GRACE = 5.0  # after a cancel, how long the handler waits for the call's process group to be gone
INSTRUCTIONS = ("Tools defined in YAML and run by nami: each call is validated against its JSON Schema, decided by "
                "the project's policy and recorded in its audit log. A refused call says which rule refused it.")


def build_server(served: ServedTools) -> Server[Any]:
    listing = types.ListToolsResult(tools=[mcp_tool(tool) for tool in served.tools])
    names = sorted(tool.name for tool in served.tools)
    listed = frozenset(names)
    running: list[anyio.Semaphore] = []  # made in the server's event loop, at its first call

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        if cursor is not None:  # nami never hands one out: every tool comes in the first page
            raise MCPError(types.INVALID_PARAMS, f"invalid cursor {cursor[:64]!r}: this server lists all its tools "
                                                 "at once, so a list request needs no cursor")
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        call = await anyio.to_thread.run_sync(served.start, params.name, params.arguments, client_name(ctx),
                                              client_asker(ctx))
        if params.name not in listed:
            # The spec's answer to a tool that does not exist is a protocol error, not a tool result; the
            # call is still in the audit log (served.start wrote it).
            raise MCPError(types.INVALID_PARAMS, unknown_tool(params.name, names))
        if call.refused:
            result = call.result
        else:
            # A client (or all of them, over HTTP) flooding calls waits here, cancellable, rather than
            # starting a thread and a process for every request at once.
            if not running:
                running.append(anyio.Semaphore(served.max_parallel))
            async with running[0]:
                result = await run_cancellable(call)
        assert result is not None
        result, structured = served.structured(params.name, result)  # output.schema: structuredContent
        return types.CallToolResult(content=[types.TextContent(text=result.content)], structured_content=structured,
                                    is_error=not result.ok)

    return Server("nami", version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def unknown_tool(name: str, names: list[str]) -> str:
    """The message for a tool this server does not have: a likely meant one, then all, sorted."""
    shown = name if len(name) <= 64 else name[:63] + "…"
    return (f"unknown tool {shown!r}{did_you_mean(name, names) or '.'} The tools of this server: "
            f"{', '.join(sorted(names)) or 'none'}")


def mcp_tool(tool: Tool) -> types.Tool:
    """A tool as MCP clients see it: its own JSON Schema, and hints from its risk (read: read-only; write and
    exec: may destroy, as overwriting a file or running a command can)."""
    annotations = types.ToolAnnotations(read_only_hint=tool.risk == "read", destructive_hint=tool.risk != "read")
    return types.Tool(name=tool.name, description=tool.description, input_schema=tool.parameters,
                      output_schema=output_schema(tool), annotations=annotations)


def client_name(ctx: Any) -> str:
    """Who asked, for the audit log: the client's name and version from its initialize request."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    if info is None:
        return "unknown MCP client"
    return f"{info.name} {info.version}".strip()


APPROVAL_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run it?", "description": "Yes runs this call once, as shown."},
        "reason": {"type": "string", "title": "Why not", "description": "Told to the agent when you say no."},
    },
    "required": ["approve"],
}


def client_asker(ctx: Any) -> Callable[[ApprovalRequest], Decision] | None:
    """How to ask the client's user about one call (elicitation), from the call's worker thread; None when
    the client did not declare the elicitation capability."""
    session = getattr(ctx, "session", None)
    params = getattr(session, "client_params", None)
    capabilities = getattr(params, "capabilities", None)
    if session is None or getattr(capabilities, "elicitation", None) is None:
        return None
    client = client_name(ctx)

    def ask(request: ApprovalRequest) -> Decision:
        async def elicit() -> types.ElicitResult:
            return await session.elicit_form(question_text(request), APPROVAL_FORM,
                                              related_request_id=getattr(ctx, "request_id", None))

        rule = request.pending.source or "the policy"
        try:
            reply = anyio.from_thread.run(elicit)
        except Exception as exc:  # no answer is a no
            return Decision.deny(f"{rule} asks, and {client}'s user could not be asked ({type(exc).__name__})",
                                 "MCP elicitation")
        content = reply.content or {}
        if reply.action == "accept" and content.get("approve") is True:
            return Decision.allow(f"approved by the user of {client}", "MCP elicitation")
        reason = " ".join(str(content.get("reason") or "").split())
        said = {"accept": "said no", "decline": "declined", "cancel": "dismissed the question"}[reply.action]
        return Decision.deny(reason or f"{rule} asks, and {client}'s user {said}", "MCP elicitation")

    return ask


async def run_cancellable(call: ServedCall) -> ToolResult:
    """Run the call in a thread; when the client cancels, cancel the call and wait (bounded) until its process
    group is gone before letting the cancellation through."""
    done: Future[ToolResult] = Future()

    def work() -> None:
        try:
            done.set_result(call.run())
        except BaseException as exc:  # run() does not raise; if it does, the client still gets an answer
            done.set_result(ToolResult.error(f"{type(exc).__name__}: {exc}"))

    threading.Thread(target=work, name=f"nami-mcp-{call.call.name}", daemon=True).start()
    waiter = asyncio.wrap_future(done)
    try:
        return await asyncio.shield(waiter)
    except anyio.get_cancelled_exc_class():
        call.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE):
            await waiter
        raise


# -- transports ----------------------------------------------------------------------------------------------

def serve_stdio(served: ServedTools) -> None:
    """Serve over stdin and stdout until the client closes stdin, or SIGTERM / Ctrl-C (KeyboardInterrupt)."""
    server = build_server(served)
    stdin = StdinLines()
    signalled: list[int] = []

    async def main() -> None:
        # The signals are the loop's while it runs: a KeyboardInterrupt raised by a Python signal handler
        # lands in whichever task runs, and asyncio printed that task's traceback as it shut down.
        loop = asyncio.get_running_loop()
        with anyio.CancelScope() as scope:
            for signum in STOP_SIGNALS:
                loop.add_signal_handler(signum, lambda n=signum: (signalled.append(n), scope.cancel()))
            async with stdio_server(stdin=stdin) as (read, write):  # type: ignore[arg-type]  # lines, as it reads
                await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)  # a cancelled call kills its process group before its handler lets go
    finally:
        served.cancel_all()
    if signalled:
        raise KeyboardInterrupt  # the CLI says "interrupted" and exits 130
    if stdin.problem:
        raise NamiError(stdin.problem)


def rebinding_guard(host: str, allowed: Sequence[str] = ()) -> TransportSecuritySettings:
    """The Host and Origin every request must carry: a name of an address the server is bound to (any port),
    or one of ``allowed`` (--allow-host), see serve/hosts.py. The SDK turns this on by itself only for
    127.0.0.1, localhost and ::1 spelt so; bound to 127.0.0.2 or [0::1] it served any Host, and with
    --allow-remote the bearer token was the only guard: a web page whose name was rebound to the address
    could send requests (the token stops them; this stops them before it is even looked at)."""
    names = served_names(host, allowed)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{name}:*" for name in names],
                                     allowed_origins=[f"{scheme}://{name}:*" for name in names
                                                      for scheme in ("http", "https")])


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await self.app(scope, receive, send)


def serve_http(served: ServedTools, host: str, port: int, *, token: str | None,
               on_ready: Callable[[str], None], allowed_hosts: Sequence[str] = ()) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted. ``on_ready`` gets the URL once the
    socket listens (the port chosen, when 0 was asked for). ``allowed_hosts``: names clients may use in
    ``Host`` besides the addresses served (a DNS name, a proxy's)."""
    import uvicorn

    server = build_server(served)
    bare = host.strip("[]")
    app: Any = server.streamable_http_app(host=bare, transport_security=rebinding_guard(bare, allowed_hosts))
    if token:
        app = BearerAuth(app, token)
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.create_server((bare, port), family=family)
    shown = f"[{bare}]" if family == socket.AF_INET6 else bare
    url = f"http://{shown}:{sock.getsockname()[1]}/mcp"
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        on_ready(url)
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        served.cancel_all()
        sock.close()
