"""``nami mcp serve`` under attack, with real processes: a web page rebinding a name to every loopback
spelling the server may be bound to, SIGTERM and Ctrl-C while the client keeps stdin open, and a client
flooding it with calls."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.programs import need_mcp

need_mcp()


from tests.mcp.helpers import NAMI, http_server  # noqa: E402

GREET = """\
name: greet
description: Say hello.
risk: read
parameters:
  type: object
  properties:
    who: {type: string}
  required: [who]
command: [echo, "hello {who}"]
"""
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}})


@pytest.fixture
def tools(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "greet.yaml").write_text(GREET)
    return workdir


def ipv6_loopback() -> bool:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return False
    return True


def post(url: str, headers: dict[str, str]) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        connection.request("POST", parts.path, INITIALIZE, {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "[::1]", "[0::1]"])
def test_rebinding_protection_holds_on_every_loopback_address(host: str, tools: Path) -> None:
    if ":" in host and not ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback")
    with http_server(["--tools", "tools"], tools, host=host) as (url, _process):
        port = urlsplit(url).port
        # A page of evil.example whose name now points at this machine: its Host is its own name.
        assert post(url, {"Host": f"evil.example:{port}"}) == 421
        # A page of another origin sending to the right Host.
        assert post(url, {"Host": urlsplit(url).netloc, "Origin": "http://evil.example"}) == 403
        assert post(url, {"Host": urlsplit(url).netloc}) == 200  # a local client is served


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_stdio_ends_on_a_signal_while_the_client_keeps_stdin_open(signum: int, tools: Path) -> None:
    process = subprocess.Popen([*NAMI, "mcp", "serve", "--tools", "tools"], cwd=tools, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(INITIALIZE.encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1  # it serves, reading stdin
        process.send_signal(signum)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"nami mcp serve still runs 20 s after {signal.Signals(signum).name} (stdin open)")
        stderr = process.stderr.read().decode() if process.stderr else ""
        assert code == 130, stderr
        assert "Traceback" not in stderr and "interrupted" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
