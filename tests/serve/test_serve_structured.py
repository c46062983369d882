"""``output.schema`` over MCP, seen by the SDK's own client (which checks structuredContent against the
outputSchema itself): the schema as the tool's outputSchema (wrapped in an object when it describes another
value), the shaped value as structuredContent, and an error when the output cannot be that value."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import write
from tests.programs import need_mcp

need_mcp()

import anyio  # noqa: E402

from tests.mcp.helpers import stdio_session, text_of  # noqa: E402

PODS = {"items": [{"metadata": {"name": f"web-{n}", "uid": f"u{n}"}, "status": {"phase": "Running"}} for n in range(3)]}
TOOLS = """\
tools:
  - name: pods
    description: Pod names and phases.
    risk: read
    command: [cat, pods.json]
    output:
      format: json
      select: "items[].{name: metadata.name, phase: status.phase}"
      schema:
        type: array
        items: {type: object, properties: {name: {type: string}, phase: {type: string}}, required: [name]}
  - name: summary
    description: How many pods.
    risk: read
    command: [cat, pods.json]
    output:
      format: json
      select: "{count: length(items), first: items[0].metadata.name}"
      schema: {type: object, properties: {count: {type: integer}, first: {type: string}}, required: [count]}
  - name: broken
    description: Output that is not what it promises.
    risk: read
    command: [echo, "not json at all"]
    output:
      format: json
      schema: {type: object}
  - name: plain
    description: No schema.
    risk: read
    command: [echo, plain]
"""


def serve(workdir: Path, tmp_path: Path, scenario: Callable[[Any], Any]) -> Any:
    write(workdir / "pods.json", json.dumps(PODS, indent=2))
    write(workdir / "tools" / "shaped.yaml", TOOLS)

    async def main() -> Any:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "--tools", "tools"], workdir, errlog) as session:
                return await scenario(session)

    return anyio.run(main)


def test_output_schema_and_structured_content(workdir: Path, tmp_path: Path) -> None:
    async def scenario(session: Any) -> Any:
        listed = {tool.name: tool.output_schema for tool in (await session.list_tools()).tools}
        return listed, await session.call_tool("pods", {}), await session.call_tool("summary", {})

    listed, pods, summary = serve(workdir, tmp_path, scenario)
    assert listed["pods"] == {"type": "object", "required": ["result"], "properties": {"result": {
        "type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                  "phase": {"type": "string"}}, "required": ["name"]}}}}
    assert listed["summary"] == {"type": "object", "properties": {"count": {"type": "integer"},
                                                                  "first": {"type": "string"}}, "required": ["count"]}
    assert listed["plain"] is None
    assert not pods.is_error
    assert pods.structured_content == {"result": [{"name": f"web-{n}", "phase": "Running"} for n in range(3)]}
    assert '{"name":"web-0","phase":"Running"}' in text_of(pods)  # the text content is what a model reads
    assert summary.structured_content == {"count": 3, "first": "web-0"}


def test_output_that_cannot_be_the_promised_value_is_an_error(workdir: Path, tmp_path: Path) -> None:
    async def scenario(session: Any) -> Any:
        return await session.call_tool("broken", {}), await session.call_tool("plain", {})

    broken, plain = serve(workdir, tmp_path, scenario)
    assert broken.is_error and broken.structured_content is None
    assert "not json at all" in text_of(broken)
    assert "[the output does not match the tool's output.schema: it could not be read" in text_of(broken)
    assert not plain.is_error and plain.structured_content is None and text_of(plain) == "plain"
