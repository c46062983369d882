"""A server's progress notifications reach the status line while its call runs, and its log messages
(notifications/message) reach -v output, redacted: with the official SDK's server (tests/mcp/fixture_server.py,
tool ``progress``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.programs import need_mcp

need_mcp()

from nami_yaml.cancel import CancelToken  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls  # noqa: E402
from tests.cli.terminal import Terminal  # noqa: E402
from tests.helpers import run_nami  # noqa: E402
from tests.mcp.helpers import FIXTURE, fixture_spec, servers  # noqa: E402


def test_a_calls_progress_and_the_servers_log_messages_are_told(workdir: Path) -> None:
    progress: list[str] = []
    logs: list[tuple[str, str, str]] = []
    with servers(workdir, fixture_spec("fx", "--progress")) as running:
        running.start()
        running.on_log = lambda server, level, message: logs.append((server, level, message))
        reply = running.call_tool("fx", "progress", {}, timeout=30, cancel=CancelToken(), progress=progress.append)
    assert reply.ok and reply.text == "copied"
    assert progress == ["1/3 (33%) reading", "2/3 (67%) copying", "3/3 (100%) checking"]
    assert ("fx", "info", "starting the copy") in logs
    assert ("fx", "warning", '{"step": "auth", "password": "[redacted]"}') in logs  # as the audit log redacts
    assert not any("below the level" in message for _, _, message in logs)


def project(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text(
        f"mcp_servers:\n  fx:\n    command: {json.dumps(sys.executable)}\n    args: [{json.dumps(str(FIXTURE))}, --progress]\n"
        "rules:\n  - tool: fx__*\n    decision: allow\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0


def test_verbose_output_has_the_servers_log_and_the_calls_progress(fake_openai: FakeOpenAIServer,
                                                                   workdir: Path) -> None:
    project(workdir)
    fake_openai.add(tool_calls(call("fx__progress", {})), text("done"))
    fake_openai.add(tool_calls(call("fx__progress", {})), text("done"))
    verbose = run_nami(fake_openai, "run", "-v", "copy it", cwd=workdir)
    quiet = run_nami(fake_openai, "run", "copy it", cwd=workdir)
    assert verbose.returncode == 0 and quiet.returncode == 0, verbose.stderr + quiet.stderr
    assert "[MCP server fx, info] starting the copy" in verbose.stderr
    assert '[MCP server fx, warning] {"step": "auth", "password": "[redacted]"}' in verbose.stderr
    assert "… fx__progress: 2/3 (67%) copying" in verbose.stderr  # no terminal: a line of its own
    assert "hunter2" not in verbose.stderr + verbose.stdout
    assert "starting the copy" not in quiet.stderr and "copying" not in quiet.stderr  # only with -v


def test_the_status_line_says_how_far_a_running_call_is(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    project(workdir)
    fake_openai.add(tool_calls(call("fx__progress", {"pause": 1.0})), text("All copied."))
    nami = Terminal(fake_openai, ["run", "copy it"], workdir)
    try:
        nami.expect(r"running fx__progress: 1/3 \(33%\) reading · \d\.\ds")
        nami.expect(r"running fx__progress: 2/3 \(67%\) copying · [1-9]\.\ds")  # the call's time goes on
        assert nami.finish() == 0
    finally:
        nami.close()
    assert "All copied." in nami.text() and "copying" not in nami.text()  # erased once answered
