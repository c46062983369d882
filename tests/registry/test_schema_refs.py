"""Parameter schemas never reach out: no remote or file `$ref` at load, none followed while validating."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tool_file
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runtime import RuntimeContext


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records every request it gets."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = json.dumps({"enum": ["from-the-network"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def _tool(parameters: dict[str, Any]) -> Tool:
    runner = CommandRunner(["echo", "ok"], ProcessOptions())
    return Tool("t", "d", parameters, "read", runner, "t.yaml:1:1")


def _prepare(ctx: RuntimeContext, parameters: dict[str, Any], arguments: dict[str, Any]) -> Any:
    return Executor(Registry([_tool(parameters)]), ctx).prepare("t", arguments)


def test_validating_arguments_sends_no_request_for_a_remote_ref(ctx: RuntimeContext,
                                                               listener: tuple[str, list[str]]) -> None:
    base, seen = listener
    parameters = {"type": "object", "properties": {"x": {"$ref": f"{base}/x.json"}}, "required": ["x"]}
    outcome = _prepare(ctx, parameters, {"x": "anything"})
    assert seen == []
    assert not isinstance(outcome, PreparedToolCall) and not outcome.ok
    assert "cannot be resolved" in outcome.content and "from-the-network" not in outcome.content


def test_validating_arguments_reads_no_file_for_a_file_ref(ctx: RuntimeContext, tmp_path: Path) -> None:
    secret = tmp_path / "enum.json"
    secret.write_text(json.dumps({"enum": ["s3cr3t-value-outside-the-workspace"]}))
    parameters = {"type": "object", "properties": {"x": {"$ref": secret.as_uri()}}, "required": ["x"]}
    outcome = _prepare(ctx, parameters, {"x": "guess"})
    assert not isinstance(outcome, PreparedToolCall)
    assert "s3cr3t" not in outcome.content and "cannot be resolved" in outcome.content


def test_local_refs_still_work(ctx: RuntimeContext) -> None:
    parameters = {"type": "object", "$defs": {"name": {"type": "string", "pattern": "^[a-z]+$"}},
                  "properties": {"x": {"$ref": "#/$defs/name"}}, "required": ["x"]}
    assert isinstance(_prepare(ctx, parameters, {"x": "abc"}), PreparedToolCall)
    refused = _prepare(ctx, parameters, {"x": "ABC"})
    assert not isinstance(refused, PreparedToolCall) and "does not match" in refused.content


def test_a_metaschema_ref_resolves_offline(ctx: RuntimeContext, listener: tuple[str, list[str]]) -> None:
    """The draft's own metaschema ships with jsonschema: referring to it needs no network."""
    parameters = {"type": "object", "properties": {"x": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    assert isinstance(_prepare(ctx, parameters, {"x": {"type": "string"}}), PreparedToolCall)


TOOL = """\
name: t
description: d
parameters:
  type: object
  $defs:
    ok: {{type: string}}
  properties:
    x: {{$ref: "{ref}"}}
    y: {{$ref: "#/$defs/ok"}}
    z: {{enum: [{{$ref: "http://data.example/not-a-ref"}}]}}
  required: [x, y]
command: [echo, "{{x}}", "{{y}}"]
"""


@pytest.mark.parametrize("ref", ["http://127.0.0.1:18092/x.json", "file:///etc/passwd", "enum.json",
                                 "https://json-schema.org/draft/2020-12/schema", "//host/x", "x.json#/a"])
def test_a_non_local_ref_is_refused_at_load(tmp_path: Path, ref: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TOOL.format(ref=ref))
    tools, problems = load_tool_file(path)
    assert tools == []
    assert [(p.path, p.message) for p in problems] == [
        ("$.parameters.properties.x['$ref']",
         f"$ref {ref!r} points outside this schema; only local references (#/...) are allowed, "
         "so validating arguments never reads a file or the network"),
    ]


def test_dynamic_refs_are_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TOOL.format(ref="#/$defs/ok").replace('z: {enum', 'w: {$dynamicRef: "http://x/y"}\n    z: {enum'))
    tools, problems = load_tool_file(path)
    assert tools == [] and [p.path for p in problems] == ["$.parameters.properties.w['$dynamicRef']"]


def test_local_refs_load(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TOOL.format(ref="#/$defs/ok"))
    tools, problems = load_tool_file(path)
    assert problems == [] and [t.name for t in tools] == ["t"]


def test_properties_named_like_data_keywords_are_still_searched() -> None:
    """A parameter called `default` or `enum` is a schema, not data: its $ref counts."""
    from nami_yaml.spec.json_schemas import non_local_refs

    schema = {"type": "object", "properties": {
        "default": {"$ref": "http://a/x"}, "enum": {"items": [{"$ref": "file:///b"}]},
        "ok": {"default": {"$ref": "http://data/only"}, "enum": [{"$ref": "http://data/too"}]}},
        "$defs": {"const": {"anyOf": [{"$dynamicRef": "c.json"}]}},
        "patternProperties": {"^x": {"not": {"$ref": "d.json#/e"}}}}
    assert non_local_refs(schema) == [
        (("properties", "default", "$ref"), "http://a/x"),
        (("properties", "enum", "items", 0, "$ref"), "file:///b"),
        (("$defs", "const", "anyOf", 0, "$dynamicRef"), "c.json"),
        (("patternProperties", "^x", "not", "$ref"), "d.json#/e"),
    ]
