"""The protocol nami agrees on with a server, and a server's resource list changes on the 2026-07-28 protocol,
which come only on the ``subscriptions/listen`` stream nami opens (tests/mcp/fixture_server.py publishes them on
the SDK's subscription bus, as the SDK's MCPServer does): over stdio and streamable HTTP; a server of 2025
(the handshake only) still gets its notifications handled; a stream lost is opened again; a server that
refuses or ends the stream is a -v notice; nothing is left running after."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION  # noqa: E402

from nami_yaml.cancel import CancelToken  # noqa: E402
from nami_yaml.config.mcp_servers import McpServerSpec  # noqa: E402
from nami_yaml.mcp import subscriptions  # noqa: E402
from nami_yaml.mcp.client import McpServers  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls  # noqa: E402
from tests.helpers import run_nami  # noqa: E402
from tests.mcp.helpers import FIXTURE, HOST_PIDS, fixture_spec, gone, server_pid, servers  # noqa: E402

Logs = list[tuple[str, str, str]]


def listened(running: McpServers) -> Logs:
    logs: Logs = []
    running.on_log = lambda server, level, message: logs.append((server, level, message))
    return logs


def uris(running: McpServers, name: str) -> list[str]:
    return [resource.uri for resource in running.connections[name].resources or ()]


def add_resource_and_wait(running: McpServers, name: str) -> None:
    """A resource is added on the server while nami runs; nami lists them again (or the test fails)."""
    assert "file:///new.md" not in uris(running, name)
    added = running.call_tool(name, "add_resource", {}, timeout=30, cancel=CancelToken())
    assert added.ok, added.text
    deadline = time.monotonic() + 15
    while "file:///new.md" not in uris(running, name):
        assert time.monotonic() < deadline, f"never listed again: {uris(running, name)}"
        time.sleep(0.05)


def test_a_resource_added_on_a_2026_server_is_seen_over_stdio(workdir: Path) -> None:
    pids = workdir / "pids"
    with servers(workdir, fixture_spec("fx", "--resources", "--pid-file", str(pids))) as running:
        running.start()
        logs = listened(running)
        add_resource_and_wait(running, "fx")
        assert running.connections["fx"].protocol == LATEST_MODERN_VERSION == "2026-07-28"
        read = running.read_resource("fx", {"uri": "config://app"}, timeout=30, cancel=CancelToken())
        assert running.call_tool("fx", "echo", {"text": "still here"}, timeout=30, cancel=CancelToken()).ok
    assert "[the server's resources changed since this tool was described" in read.text
    assert "file:///new.md" in read.text
    assert logs == [] and running.take_notices() == []  # nothing to tell: it worked
    assert gone(server_pid(pids)) and running._thread is not None and not running._thread.is_alive()


def test_a_2025_server_still_has_its_changes_listed_and_gets_no_listen(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources", "--legacy")) as running:
        running.start()
        logs = listened(running)
        connection = running.connections["fx"]
        assert connection.protocol in HANDSHAKE_PROTOCOL_VERSIONS and connection.listener is None
        add_resource_and_wait(running, "fx")  # its notifications/resources/list_changed, unasked
    assert logs == [] and running.take_notices() == []
    log = (workdir.parent / "logs" / "fx.log").read_text()
    assert "listen stream opened" not in log


@contextmanager
def http_fixture(*args: str) -> Iterator[tuple[str, queue.Queue[str]]]:
    """The fixture over streamable HTTP, as a process of its own: its URL, and its stderr's lines."""
    process = subprocess.Popen([sys.executable, str(FIXTURE), "--http", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    try:
        assert process.stdout is not None and process.stderr is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url + process.stderr.read()
        threading.Thread(target=lambda: [lines.put(line.strip()) for line in process.stderr], daemon=True).start()
        yield url, lines
    finally:
        process.kill()
        process.wait()


def next_line(lines: queue.Queue[str], starting: str) -> str:
    """The server's next stderr line that starts with ``starting`` (or the test fails)."""
    deadline = time.monotonic() + 15
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line.startswith(starting):
            return line


def test_a_resource_added_on_a_2026_server_is_seen_over_http_and_the_stream_is_closed_after(workdir: Path) -> None:
    with http_fixture("--resources") as (url, server_says):
        with servers(workdir, McpServerSpec("web", url=url, where="agent.yaml:3:3")) as running:
            running.start()
            logs = listened(running)
            assert running.connections["web"].state == "ready", running.take_notices()
            add_resource_and_wait(running, "web")
            assert running.connections["web"].protocol == "2026-07-28"
            opened = next_line(server_says, "listen stream opened")
        # nami asked for resource list changes only, and ended its stream when it stopped (the server runs on)
        assert opened == "listen stream opened: {'resources_list_changed': True}"
        assert next_line(server_says, "listen stream closed")
        assert logs == [] and running.take_notices() == []


def test_a_server_that_refuses_the_stream_is_a_verbose_notice_and_keeps_working(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources", "--refuse-listen"),
                 fixture_spec("quiet", "--resources", "--no-listen")) as running:
        running.start()
        logs = listened(running)  # told what happened at the start, once someone listens
        echo = running.call_tool("fx", "echo", {"text": "hi"}, timeout=30, cancel=CancelToken())
        read = running.read_resource("quiet", {"uri": "config://app"}, timeout=30, cancel=CancelToken())
        tools = {tool.name for tool in running.tools()}
    assert echo.ok and read.text == '{"replicas": 3}' and {"fx__read_resource", "quiet__read_resource"} <= tools
    assert running.take_notices() == []  # not a failure
    assert sorted(logs) == [  # the two started at once
        ("fx", "notice", "(nami) it refused subscriptions/listen (subscriptions are switched off on this server); "
                         "changes to its resources are not seen from now on (the read tool lists them fresh "
                         "without uri)"),
        ("quiet", "notice", "(nami) it announces no resource list changes (its capabilities: "
                            "resources.listChanged is off); the read tool's list is the one of its start")]


def project(workdir: Path, *args: str) -> None:
    fixture_args = ", ".join(json.dumps(arg) for arg in (str(FIXTURE), "--resources", *args))
    (workdir / "agent.yaml").write_text(
        f"mcp_servers:\n  fx:\n    command: {json.dumps(sys.executable)}\n    args: [{fixture_args}]\n"
        f"    {HOST_PIDS}\nrules:\n  - tool: fx__*\n    decision: allow\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0


def test_a_run_opens_and_closes_the_stream_cleanly(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    pids = workdir / "pids"
    project(workdir, "--pid-file", str(pids))
    fake_openai.add(tool_calls(call("fx__read_resource", {"uri": "config://app"})), text("read"))
    done = run_nami(fake_openai, "run", "-v", "read the config", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "read" in done.stdout
    assert "Traceback" not in done.stderr and "subscriptions/listen" not in done.stderr
    assert "Exception" not in done.stderr and "was never" not in done.stderr  # no task left to warn about
    assert gone(server_pid(pids))


def test_a_refused_stream_is_told_with_v_only(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    project(workdir, "--refuse-listen")
    for _ in range(2):
        fake_openai.add(tool_calls(call("fx__echo", {"text": "hi"})), text("said"))
    verbose = run_nami(fake_openai, "run", "-v", "say hi", cwd=workdir)
    quiet = run_nami(fake_openai, "run", "say hi", cwd=workdir)
    assert verbose.returncode == 0 and quiet.returncode == 0, verbose.stderr + quiet.stderr
    assert "[MCP server fx, notice] (nami) it refused subscriptions/listen (subscriptions are switched off on " \
           "this server)" in verbose.stderr
    assert "subscriptions/listen" not in quiet.stderr and "Traceback" not in verbose.stderr + quiet.stderr


def opened_streams(workdir: Path, name: str = "fx") -> int:
    return (workdir.parent / "logs" / f"{name}.log").read_text().count("listen stream opened")


def test_a_lost_stream_is_opened_again_and_changes_are_seen_after(workdir: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscriptions, "QUICK_LOSS", 0.0)  # lost however soon: opened again
    with servers(workdir, fixture_spec("fx", "--resources")) as running:
        running.start()
        logs = listened(running)
        assert running.call_tool("fx", "drop_listen", {}, timeout=30, cancel=CancelToken()).ok
        deadline = time.monotonic() + 15
        while opened_streams(workdir) < 2:
            assert time.monotonic() < deadline, "the stream was not opened again"
            time.sleep(0.05)
        add_resource_and_wait(running, "fx")  # told on the new stream
    assert logs == [] and running.take_notices() == []


def test_a_stream_the_server_ends_is_a_verbose_notice(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources")) as running:
        running.start()
        logs = listened(running)
        assert running.call_tool("fx", "end_listen", {}, timeout=30, cancel=CancelToken()).ok
        deadline = time.monotonic() + 15
        while not logs:
            assert time.monotonic() < deadline, "nothing was told"
            time.sleep(0.05)
        assert running.call_tool("fx", "echo", {"text": "on"}, timeout=30, cancel=CancelToken()).ok
    assert logs == [("fx", "notice", "(nami) it ended the subscriptions/listen stream; changes to its resources are "
                                     "not seen from now on (the read tool lists them fresh without uri)")]
    assert opened_streams(workdir) == 1 and running.take_notices() == []
