"""A small MCP server over stdio for the tests: the official SDK's low-level server with a few tools.

echo (read-only), shout, slow (sleeps; its pid file says it started), crash (the process exits at once),
big (a long output), show_env (one variable of its environment), fail (an error result); with ``--progress``
also progress (three progress notifications and some log messages). ``--pid-file PATH``
appends its pid; ``--child-pid-file PATH`` starts a ``sleep`` child (in its process group) and records its pid;
``--hang`` never answers. Hostile ones: ``--endless-list`` pages its tool list forever, ``--many-tools N`` lists N
tools, ``--stderr-flood BYTES`` writes that much to stderr before it serves, ``--tool-names A,B`` lists tools
of those names (``--description TEXT`` for each). ``--schemas FILE`` lists the ``functions:`` of a YAML file
(tests/registry/bfcl_style.yaml) as tools, each answering with the arguments it got, as JSON. ``--binary`` lists
tools answering with binary data: picture (an image block), chart (base64 in structuredContent, no text),
report (a PDF as base64 in the JSON text and in structuredContent), thumbnail (a data: URI in a text block). ``--cyclic-schema`` lists one whose ``$ref`` comes back to itself.
``--resources`` serves resources (two pages: runbook and config, then a logo) and a prompt ``triage``; a call of
``drop_listen`` (not listed) fails its listen streams, ``end_listen`` ends them gracefully; ``add_resource``
(not listed) adds one and says so as a server of its protocol does: on 2026-07-28 it publishes
the change on its subscription bus, which reaches only the clients that opened ``subscriptions/listen`` (as the
SDK's MCPServer does); with ``--legacy`` (the 2025 handshake only, no ``server/discover``) it sends
notifications/resources/list_changed to its session. ``--no-listen`` serves no ``subscriptions/listen``
(its capabilities say so), ``--refuse-listen`` refuses every one. Its stderr says when a listen stream opens
and closes. ``--http`` serves streamable HTTP on 127.0.0.1 (a free port) instead of stdio, its URL the first
line of its stdout.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import yaml
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged
from mcp.shared.exceptions import MCPError

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = [
    types.Tool(name="echo", description="Say the text back.", input_schema=TEXT,
               annotations=types.ToolAnnotations(read_only_hint=True)),
    types.Tool(name="shout", description="Say the text back in capitals.", input_schema=TEXT),
    types.Tool(name="slow", description="Wait a long time.", input_schema={
        "type": "object", "properties": {"seconds": {"type": "number"}, "marker": {"type": "string"}}}),
    types.Tool(name="crash", description="Exit the server process.", input_schema={"type": "object"}),
    types.Tool(name="big", description="A long output.", input_schema={
        "type": "object", "properties": {"lines": {"type": "integer"}}}),
    types.Tool(name="show_env", description="One variable of the environment.", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    types.Tool(name="fail", description="An error result.", input_schema={"type": "object"}),
]
PROGRESS_TOOL = types.Tool(name="progress", description="Work in three steps, saying how far it is and logging.",
                           input_schema={"type": "object", "properties": {"pause": {"type": "number"}}})


# Real formats' first bytes, then noise: what a screenshot tool or a chart renderer sends.
PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(37_492)
PDF = b"%PDF-1.7\n" + os.urandom(20_000)
BINARY_TOOLS = [types.Tool(name=name, description=f"Binary data: {name}.", input_schema={"type": "object"})
                for name in ("picture", "chart", "report", "thumbnail")]


def binary_reply(name: str) -> types.CallToolResult:
    png, pdf = base64.b64encode(PNG).decode(), base64.b64encode(PDF).decode()
    if name == "picture":
        return types.CallToolResult(content=[types.ImageContent(data=png, mime_type="image/png")])
    if name == "chart":
        return types.CallToolResult(content=[], structured_content={"title": "Sales", "png": png, "points": 12})
    if name == "report":
        structured = {"name": "q3.pdf", "pages": 4, "content": pdf}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(structured))],
                                    structured_content=structured)
    return reply(f"data:image/png;base64,{png}")


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    if "--endless-list" in sys.argv:  # one tool a page, and always another page
        page = int(params.cursor) if params is not None and params.cursor else 0
        tool = types.Tool(name=f"t{page}", description="One of many.", input_schema={"type": "object"})
        return types.ListToolsResult(tools=[tool], next_cursor=str(page + 1))
    if "--many-tools" in sys.argv:
        count = int(sys.argv[sys.argv.index("--many-tools") + 1])
        return types.ListToolsResult(tools=[types.Tool(name=f"t{n}", input_schema={"type": "object"})
                                            for n in range(count)])
    if "--huge-schema" in sys.argv:  # one tool whose schema has this many properties
        count = int(sys.argv[sys.argv.index("--huge-schema") + 1])
        schema = {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(count)}}
        return types.ListToolsResult(tools=[types.Tool(name="wide", input_schema=schema), *TOOLS[:1]])
    if "--binary" in sys.argv:
        return types.ListToolsResult(tools=[*TOOLS, *BINARY_TOOLS])
    if "--progress" in sys.argv:
        return types.ListToolsResult(tools=[*TOOLS, PROGRESS_TOOL])
    if "--schemas" in sys.argv:
        return types.ListToolsResult(tools=[types.Tool(name=f["name"], description=f["description"],
                                                       input_schema=f["parameters"]) for f in _functions()])
    if "--cyclic-schema" in sys.argv:  # a schema whose $ref comes back to itself: validating never ends
        schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}}
        return types.ListToolsResult(tools=[types.Tool(name="loop", input_schema=schema), *TOOLS[:1]])
    if "--tool-names" in sys.argv:
        names = sys.argv[sys.argv.index("--tool-names") + 1].split(",")
        about = sys.argv[sys.argv.index("--description") + 1] if "--description" in sys.argv else "Named."
        return types.ListToolsResult(tools=[types.Tool(name=name, description=about, input_schema={"type": "object"})
                                            for name in names])
    return types.ListToolsResult(tools=TOOLS)


def _functions() -> list[dict[str, object]]:
    path = Path(sys.argv[sys.argv.index("--schemas") + 1])
    return yaml.safe_load(path.read_text(encoding="utf-8"))["functions"]


def reply(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if "--schemas" in sys.argv:
        return reply(json.dumps(args, sort_keys=True))
    if params.name in {tool.name for tool in BINARY_TOOLS}:
        return binary_reply(params.name)
    if params.name == "echo":
        return reply(args["text"])
    if params.name == "shout":
        return reply(args["text"].upper())
    if params.name == "slow":
        if args.get("marker"):
            Path(args["marker"]).write_text(str(my_pid()))
        await anyio.sleep(float(args.get("seconds", 60)))
        return reply("slept")
    if params.name == "crash":
        print("crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)
    if params.name == "big":
        return reply("\n".join(f"line {i}" for i in range(int(args.get("lines", 10_000)))))
    if params.name == "show_env":
        return reply(repr(os.environ.get(args["name"])))
    if params.name == "fail":
        return reply("it went wrong", error=True)
    if params.name == "add_resource":  # its resource list changes, and it says so
        RESOURCES[0].append(types.Resource(uri="file:///new.md", name="new", mime_type="text/markdown"))
        if "--legacy" in sys.argv:
            await ctx.session.send_resource_list_changed()  # type: ignore[attr-defined]
        else:
            await BUS.publish(ResourcesListChanged())
        return reply("added")
    if params.name == "drop_listen":  # its listen streams fail (an error, not the graceful end)
        for scope in DROPPED:
            scope.cancel()
        return reply("dropped")
    if params.name == "end_listen":  # its listen streams end gracefully, as a server that stops does
        LISTENING.close()
        return reply("ended")
    if params.name == "progress":  # progress notifications, and log messages (one holding a secret)
        session = ctx.session  # type: ignore[attr-defined]
        await session.send_log_message("info", "starting the copy")
        await session.send_log_message("debug", "below the level asked for: never sent")
        await session.send_log_message("warning", {"step": "auth", "password": "hunter2-very-secret"})
        for step, what in enumerate(("reading", "copying", "checking"), start=1):
            await session.report_progress(step, 3, what)
            await anyio.sleep(float(args.get("pause", 0.05)))
        return reply("copied")
    return reply(f"unknown tool {params.name}", error=True)


def my_pid() -> int:
    """This process's pid as the tests see it: in a sandbox, its pid namespace has pids of its own, so the
    host's /proc (the fixture's ``sandbox: {reads: [/proc]}``) says which it is there."""
    return int(os.readlink("/proc/self"))


def host_pid_of_child(child: subprocess.Popen[bytes]) -> int:
    """A child's pid as the tests see it (see my_pid): the one child listed by the host's /proc."""
    listed = Path("/proc/thread-self/children").read_text().split()
    return int(listed[-1]) if listed else child.pid


def running_pid(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


RESOURCES = [[types.Resource(uri="file:///runbook.md", name="runbook", description="What to do when web is down.",
                             mime_type="text/markdown"),
              types.Resource(uri="config://app", name="config", mime_type="application/json")],
             [types.Resource(uri="file:///logo.png", name="logo", mime_type="image/png")]]
CONTENTS = {"file:///runbook.md": "1. Check the pods.\n2. Roll back.", "config://app": '{"replicas": 3}'}


async def list_resources(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    page = int(params.cursor) if params is not None and params.cursor else 0
    return types.ListResourcesResult(resources=RESOURCES[page], next_cursor="1" if page == 0 else None)


async def read_resource(ctx: object, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == "file:///logo.png":
        return types.ReadResourceResult(contents=[types.BlobResourceContents(
            uri=uri, mime_type="image/png", blob=base64.b64encode(PNG[:3000]).decode())])
    if uri not in CONTENTS:  # an MCPError: on 2026-07-28 another exception's text is not sent ("Internal error")
        raise MCPError(types.INVALID_PARAMS, f"no resource {uri}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=CONTENTS[uri])])


async def list_prompts(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(
        name="triage", description="Triage an alert.", arguments=[types.PromptArgument(name="service", required=True)])])


async def get_prompt(ctx: object, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != "triage":
        raise MCPError(types.INVALID_PARAMS, f"no prompt {params.name}")
    service = (params.arguments or {}).get("service", "?")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=types.TextContent(
        text=f"Triage the alert for {service}: read the runbook first."))])


BUS = InMemorySubscriptionBus()
LISTENING = ListenHandler(BUS)
DROPPED: list[anyio.CancelScope] = []  # the listen streams drop_listen fails


async def listen(ctx: object, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
    """The SDK's own subscriptions/listen handler, saying on stderr when a stream opens and ends."""
    if "--refuse-listen" in sys.argv:
        raise MCPError(types.INVALID_REQUEST, "subscriptions are switched off on this server")
    print(f"listen stream opened: {params.notifications.model_dump(exclude_none=True)}", file=sys.stderr, flush=True)
    try:
        with anyio.CancelScope() as dropped:
            DROPPED.append(dropped)
            return await LISTENING(ctx, params)  # type: ignore[arg-type]
        raise MCPError(types.INTERNAL_ERROR, "the stream broke")  # drop_listen was called
    finally:
        print("listen stream closed", file=sys.stderr, flush=True)


def fixture() -> Server:
    extras: dict[str, object] = {}
    if "--resources" in sys.argv:
        extras = {"on_list_resources": list_resources, "on_read_resource": read_resource,
                  "on_list_prompts": list_prompts, "on_get_prompt": get_prompt}
        if "--no-listen" not in sys.argv:
            extras["on_subscriptions_listen"] = listen
    return Server("fixture", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                  **extras)  # type: ignore[arg-type]


def serve_http(server: Server) -> None:
    import socket

    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before the URL is told: a client may connect before uvicorn has started
    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=False))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


async def main() -> None:
    if "--pid-file" in sys.argv:  # appended, with how many servers listed before are still running
        pid_file = Path(sys.argv[sys.argv.index("--pid-file") + 1])
        earlier = pid_file.read_text().split("\n") if pid_file.exists() else []
        running = sum(1 for line in earlier if line and running_pid(int(line.split()[0])))
        with open(pid_file, "a") as pids:
            pids.write(f"{my_pid()} {running}\n")
    if "--child-pid-file" in sys.argv:
        child = subprocess.Popen(["sleep", "300"])
        Path(sys.argv[sys.argv.index("--child-pid-file") + 1]).write_text(str(host_pid_of_child(child)))
    if "--hang" in sys.argv:  # never answers initialize
        await anyio.sleep(3600)
    print("fixture server starting", file=sys.stderr, flush=True)
    if "--stderr-flood" in sys.argv:
        left = int(sys.argv[sys.argv.index("--stderr-flood") + 1])
        while left > 0:
            left -= os.write(2, b"noise " * min(10_000, left // 6 + 1))
        print("flood over", file=sys.stderr, flush=True)
    server = fixture()
    async with stdio_server() as (read, write):
        if "--legacy" in sys.argv:  # a server of 2025: the initialize handshake, nothing else
            async with server.lifespan(server) as state:
                await serve_loop(server, read, write, lifespan_state=state,
                                 init_options=server.create_initialization_options())
        else:
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http(fixture())
    else:
        anyio.run(main)
