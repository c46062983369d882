"""A small MCP server over streamable HTTP for the telemetry tests (the official SDK's low-level server):
one tool, ``whoami``, answers with the trace context its request's _meta carried; every HTTP request's
``traceparent`` header is appended to the file named by argv[1]. Prints its URL once it listens."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

HEADERS_FILE = sys.argv[1]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(
        name="whoami", description="The trace context of this call.", input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True))])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    meta = params.meta or {}
    seen = {key: meta.get(key) for key in ("traceparent", "tracestate") if meta.get(key)}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps({"meta": seen}))])


class RecordHeaders:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            with open(HEADERS_FILE, "a") as out:
                out.write(headers.get(b"traceparent", b"-").decode() + "\n")
        await self.app(scope, receive, send)


def main() -> None:
    server = Server("trace-fixture", on_list_tools=list_tools, on_call_tool=call_tool)
    app = RecordHeaders(server.streamable_http_app(host="127.0.0.1"))
    sock = socket.create_server(("127.0.0.1", 0))
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    asyncio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
