"""``nami mcp serve`` under attack, with real processes: a web page rebinding a name to every loopback
spelling the server may be bound to, SIGTERM and Ctrl-C while the client keeps stdin open, and a client
flooding it with calls."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.programs import need_mcp

need_mcp()


import anyio  # noqa: E402

from tests.mcp.helpers import NAMI, http_server, stdio_session, text_of  # noqa: E402

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


@pytest.mark.parametrize("spelling", ["localhost.", "0x7f.1", "2130706433", "127.1", "0177.0.0.1",
                                      "[::ffff:127.0.0.1]", "127.0.0.1.nip.io", "LOCALHOST.evil.example"])
def test_a_host_naming_loopback_in_another_spelling_is_not_served(spelling: str, tools: Path) -> None:
    """Names that reach this machine but are not the address served (a rebound name could look like any of
    them): the guard accepts only the spellings of the address itself."""
    with http_server(["--tools", "tools"], tools) as (url, _process):
        assert post(url, {"Host": f"{spelling}:{urlsplit(url).port}"}) == 421


@pytest.mark.parametrize("host", ["localhost.", "0x7f.1", "127.1"])
def test_binding_a_loopback_address_in_another_spelling_needs_allow_remote(host: str, tools: Path) -> None:
    result = subprocess.run([*NAMI, "mcp", "serve", "--tools", "tools", "--http", f"{host}:0"], cwd=tools,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and "is not a loopback address" in result.stderr, result.stderr


TOKEN = "r" * 32


def test_allow_remote_checks_host_and_origin_too_not_only_the_token(tools: Path) -> None:
    """With --allow-remote the bearer token was the only guard: a page rebinding its name to this machine,
    with a token it had (a leaked one, a shared proxy adding it), was served. Host must name an address
    served, or a name --allow-host gives."""
    args = ["--tools", "tools", "--allow-remote", "--token-env", "NAMI_T", "--allow-host", "nami.internal"]
    with http_server(args, tools, {"NAMI_T": TOKEN}, host="0.0.0.0") as (url, _process):
        port = urlsplit(url).port
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post(url, {**auth, "Host": f"evil.example:{port}"}) == 421
        assert post(url, {**auth, "Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"}) == 403
        assert post(url, {**auth, "Host": f"127.0.0.1:{port}"}) == 200  # an address it serves
        assert post(url, {**auth, "Host": f"{socket.gethostname()}:{port}"}) == 200  # this machine's name
        assert post(url, {**auth, "Host": f"nami.internal:{port}", "Origin": f"https://nami.internal:{port}"}) == 200
        assert post(url, {"Host": f"127.0.0.1:{port}"}) == 401  # and the token is still needed


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


# Each call marks itself with a file of its own name: not "$$", which is the same in every sandbox (each call
# has a pid namespace of its own), so that every count was 1 whatever ran at once.
HOLD = """\
name: hold
description: Count the calls running now (this one included), then hold half a second.
risk: exec
parameters: {type: object, properties: {}}
script: |
  mkdir -p running && mine=$(mktemp running/call.XXXXXX)
  ls running | wc -l >> counts
  sleep 0.5
  rm "$mine"
"""


def test_a_flood_of_calls_runs_at_most_max_parallel_tools_at_once(tools: Path, tmp_path: Path) -> None:
    (tools / "tools" / "hold.yaml").write_text(HOLD)
    (tools / "agent.yaml").write_text("tools: {builtin: [], files: [tools]}\nlimits: {max_parallel_tools: 2}\n")

    async def scenario() -> list[str]:
        replies: list[str] = []
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "-c", "agent.yaml", "--approve", "exec"], tools, errlog) as s:
                async def one() -> None:
                    replies.append(text_of(await s.call_tool("hold", {})))

                async with anyio.create_task_group() as group:
                    for _ in range(6):  # three times the limit, all at once
                        group.start_soon(one)
        return replies

    replies = anyio.run(scenario)
    assert len(replies) == 6 and all("Error" not in reply for reply in replies), replies
    counts = [int(n) for n in (tools / "counts").read_text().split()]
    assert len(counts) == 6 and max(counts) <= 2, counts


@pytest.mark.parametrize("stdin", ["null", "closed"])
def test_stdio_ends_quietly_when_stdin_has_nothing(stdin: str, tools: Path) -> None:
    def close_stdin() -> None:
        os.close(0)

    result = subprocess.run([*NAMI, "mcp", "serve", "--tools", "tools"], cwd=tools, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, preexec_fn=close_stdin if stdin == "closed" else None,
                            timeout=60)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


def test_stdio_ends_a_session_whose_line_passes_the_limit(tools: Path) -> None:
    """A client sending an endless line had nami buffer it all (400 MB accepted) and rescan it per chunk:
    a line past 64 MB ends the session with a clear error, as the client side does."""
    process = subprocess.Popen([*NAMI, "mcp", "serve", "--tools", "tools"], cwd=tools, stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stderr is not None
    sent = 0
    block = b"a" * (1 << 20)
    try:
        while sent < 200 * len(block):  # far past the limit: nami must stop reading long before
            process.stdin.write(block)
            sent += len(block)
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    code = process.wait(timeout=60)
    stderr = process.stderr.read().decode()
    assert code == 1, stderr
    assert sent < 200 * len(block)  # it stopped reading: the rest could not be written
    assert "a message longer than 67,108,864 bytes" in stderr and "Traceback" not in stderr
