"""Repeated flags run for real: a stub program on PATH records the argv it got, and curl sends the
headers of a repeated group to a local HTTP server."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.executor import Executor
from nami_yaml.registry.loader import check_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext
from tests.programs import needs

RECORDER = f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n"

TOOLS = """\
tools:
  - name: docker_ps
    description: List containers, filtered.
    risk: read
    parameters:
      type: object
      properties:
        filters: {type: array, items: {type: string}, description: "e.g. status=exited"}
        all: {type: boolean, default: false}
    command: [docker, ps, [--all, "{all}"], [--filter, "{filters}"]]
  - name: tar_create
    description: Pack folders into an archive, leaving out some patterns.
    risk: write
    parameters:
      type: object
      properties:
        archive: {type: string}
        paths: {type: array, items: {type: string}, minItems: 1}
        exclude: {type: array, items: {type: string}}
      required: [archive, paths]
    command: [tar, -czf, "{archive}", ["--exclude={exclude}", --exclude, "{exclude}"], --, "{paths}"]
"""


def executor_for(ctx: RuntimeContext, text: str) -> Executor:
    path = ctx.workspace.parent / "tools.yaml"
    path.write_text(text, encoding="utf-8")
    tools, problems = check_tools([path])
    assert problems == [], problems
    return Executor(Registry(tools), ctx)


@pytest.fixture
def stubbed(ctx: RuntimeContext, tmp_path: Path) -> RuntimeContext:
    """``docker`` and ``tar`` on PATH are stubs that print their argv as JSON."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("docker", "tar"):
        stub = bin_dir / name
        stub.write_text(RECORDER, encoding="utf-8")
        stub.chmod(0o755)
    host_env = {**ctx.host_env, "PATH": f"{bin_dir}{os.pathsep}{ctx.host_env.get('PATH', '')}"}
    return dataclasses.replace(ctx, host_env=host_env)


def argv_of(executor: Executor, tool: str, args: dict[str, Any]) -> list[str]:
    result = executor.execute(tool, args)
    assert result.ok, result.content
    return json.loads(result.content)


def test_docker_filter_is_repeated_once_per_item(stubbed: RuntimeContext) -> None:
    executor = executor_for(stubbed, TOOLS)
    assert argv_of(executor, "docker_ps", {"filters": ["status=exited", "label=app=web"], "all": True}) == [
        "ps", "--all", "--filter", "status=exited", "--filter", "label=app=web"]
    assert argv_of(executor, "docker_ps", {"filters": []}) == ["ps"]
    assert argv_of(executor, "docker_ps", {}) == ["ps"]


def test_tar_exclude_is_repeated_and_the_paths_expand_in_place(stubbed: RuntimeContext) -> None:
    executor = executor_for(stubbed, TOOLS)
    args = {"archive": "out.tgz", "paths": ["src", "docs"], "exclude": ["*.pyc", "build dir"]}
    assert argv_of(executor, "tar_create", args) == [
        "-czf", "out.tgz", "--exclude=*.pyc", "--exclude", "*.pyc", "--exclude=build dir", "--exclude", "build dir",
        "--", "src", "docs"]


def test_an_item_that_looks_like_an_option_is_refused_and_nothing_runs(stubbed: RuntimeContext) -> None:
    executor = executor_for(stubbed, TOOLS)
    result = executor.execute("tar_create", {"archive": "a.tgz", "paths": ["."], "exclude": ["--to-command=sh"]})
    assert not result.ok
    assert "value '--to-command=sh' of parameter 'exclude' starts with '-'" in result.content


class _EchoHeaders(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        body = json.dumps({"path": self.path, "headers": dict(self.headers.items())}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.requests.append(self.path)  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHeaders)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


CURL = """\
name: http_get
description: GET a URL with extra headers.
risk: read
parameters:
  type: object
  properties:
    url: {type: string}
    headers: {type: array, items: {type: string}, description: "e.g. 'Accept: text/plain'"}
  required: [url]
command: [curl, --silent, --show-error, --noproxy, "*", --max-time, "10", [-H, "{headers}"], "{url}"]
sandbox: {network: true}  # the server is on the host's 127.0.0.1
"""


@needs("curl")
def test_curl_sends_every_header_of_a_repeated_group(ctx: RuntimeContext, http_server: ThreadingHTTPServer) -> None:
    executor = executor_for(ctx, CURL)
    url = f"http://127.0.0.1:{http_server.server_address[1]}/probe"
    result = executor.execute("http_get", {"url": url, "headers": ["Accept: text/plain", "X-Trace: 1"]})
    assert result.ok, result.content
    seen = json.loads(result.content)
    assert seen["path"] == "/probe"
    assert (seen["headers"]["Accept"], seen["headers"]["X-Trace"]) == ("text/plain", "1")
    # One request: the second header was a header, not a second URL to fetch.
    assert http_server.requests == ["/probe"]  # type: ignore[attr-defined]
