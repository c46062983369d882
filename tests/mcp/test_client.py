"""MCP servers as a tool source (``McpServers``), against real server processes: the fixture server over
stdio and ``nami mcp serve`` over HTTP. Tools and names, calls, timeouts, cancellation, servers that do not
start, hang or crash, and no process left behind."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

from nami_yaml.cancel import CancelToken  # noqa: E402
from nami_yaml.config.mcp_servers import McpServerSpec  # noqa: E402
from nami_yaml.mcp.client import tool_name  # noqa: E402
from nami_yaml.registry.executor import Executor  # noqa: E402
from nami_yaml.registry.registry import Registry  # noqa: E402
from nami_yaml.runtime import RuntimeContext, ToolSettings  # noqa: E402
from tests.mcp.helpers import (  # noqa: E402
    FIXTURE,
    alive,
    fixture_spec,
    gone,
    http_server,
    server_pid,
    servers,
    wait_for_text,
)

TOKEN = "s" * 32


def test_its_tools_join_as_server__tool_with_their_schema_and_risk(workdir: Path) -> None:
    with servers(workdir, fixture_spec(disabled_tools=("crash",))) as running:
        running.start()
        tools = {tool.name: tool for tool in running.tools()}
    assert set(tools) == {"fx__echo", "fx__shout", "fx__slow", "fx__big", "fx__show_env", "fx__fail"}
    echo = tools["fx__echo"]
    assert echo.risk == "read" and tools["fx__shout"].risk == "exec"  # read only where the server says so
    assert echo.parameters == {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert echo.description == "Say the text back." and echo.source == "agent.yaml:3:3"
    assert echo.runner.kind == "mcp"


def test_enabled_tools_keeps_only_those_and_names_a_missing_one(workdir: Path) -> None:
    with servers(workdir, fixture_spec(enabled_tools=("echo", "nope"))) as running:
        running.start()
        assert [tool.name for tool in running.tools()] == ["fx__echo"]
        notices = running.take_notices()
    assert notices == ["MCP server fx has no tool 'nope' (enabled_tools, agent.yaml:3:3)"]


def test_calls_answer_and_the_environment_is_scrubbed(workdir: Path) -> None:
    spec = fixture_spec(env={"GREETING": "hello ${NAMI_TEST_NAME}"})
    host = {"NAMI_TEST_NAME": "ann", "MY_API_TOKEN": "secret"}
    with servers(workdir, spec, env=host) as running:
        running.start()
        token = CancelToken()
        echo = running.call_tool("fx", "echo", {"text": "hi"}, timeout=10, cancel=token)
        failed = running.call_tool("fx", "fail", {}, timeout=10, cancel=token)
        greeting = running.call_tool("fx", "show_env", {"name": "GREETING"}, timeout=10, cancel=token)
        secret = running.call_tool("fx", "show_env", {"name": "MY_API_TOKEN"}, timeout=10, cancel=token)
        terminal = running.call_tool("fx", "show_env", {"name": "TERM"}, timeout=10, cancel=token)
    assert (echo.text, echo.ok) == ("hi", True)
    assert (failed.text, failed.ok) == ("Error: it went wrong", False)
    assert greeting.text == "'hello ann'"
    assert secret.text == "None"  # secret-looking host variables are not passed on, as for tools
    assert terminal.text == "'dumb'"  # the tools' non-interactive environment


def test_a_call_that_takes_too_long_is_cancelled_and_the_server_goes_on(workdir: Path) -> None:
    with servers(workdir, fixture_spec()) as running:
        running.start()
        slow = running.call_tool("fx", "slow", {"seconds": 60}, timeout=0.5, cancel=CancelToken())
        assert slow.timed_out and not slow.ok and "timed out after 0.5 s" in slow.text
        assert running.call_tool("fx", "echo", {"text": "still here"}, timeout=10, cancel=CancelToken()).ok


def test_cancelling_a_call_returns_at_once(workdir: Path) -> None:
    marker = workdir / "slow.pid"
    with servers(workdir, fixture_spec()) as running:
        running.start()
        token = CancelToken()
        threading.Thread(target=lambda: (wait_for_text(marker), token.set()), daemon=True).start()
        reply = running.call_tool("fx", "slow", {"seconds": 60, "marker": str(marker)}, timeout=120, cancel=token)
        assert reply.interrupted and "cancelled on the server" in reply.text
        assert running.call_tool("fx", "echo", {"text": "after"}, timeout=10, cancel=CancelToken()).text == "after"


def test_servers_that_cannot_start_are_reported_once_and_the_rest_run(workdir: Path) -> None:
    specs = [
        fixture_spec("fx"),
        McpServerSpec("missing", command="nami-no-such-server", where="agent.yaml:9:3"),
        fixture_spec("hung", "--hang", startup_timeout=1.0),
        fixture_spec("keyed", env={"KEY": "${OPENAI_API_KEY}"}),
        fixture_spec("unset", env={"KEY": "${NAMI_TEST_UNSET}"}),
        fixture_spec("nowhere", cwd="no-such-folder"),
    ]
    with servers(workdir, *specs, env={"OPENAI_API_KEY": "sk-model"}) as running:
        running.start()
        assert {tool.name.split("__")[0] for tool in running.tools()} == {"fx"}
        notices = running.take_notices()
        assert running.take_notices() == []
        refused = running.call_tool("hung", "echo", {"text": "x"}, timeout=5, cancel=CancelToken())
    text = "\n".join(notices)
    assert "MCP server missing (agent.yaml:9:3) did not start: command not found: nami-no-such-server" in text
    assert "MCP server hung (agent.yaml:3:3) did not start: no answer within 1 s (startup_timeout)" in text
    assert "${OPENAI_API_KEY} holds a model API key" in text
    assert "${NAMI_TEST_UNSET} is not set" in text
    assert "no-such-folder is not a folder" in text
    assert len(notices) == 5
    assert refused.unavailable and "no answer within 1 s" in refused.text


def test_a_server_that_dies_mid_run_is_reported_once_and_its_group_is_gone(workdir: Path) -> None:
    pid_file, child_file = workdir / "server.pid", workdir / "child.pid"
    with servers(workdir, fixture_spec("fx", "--pid-file", str(pid_file), "--child-pid-file", str(child_file))) as running:
        running.start()
        crashed = running.call_tool("fx", "crash", {}, timeout=10, cancel=CancelToken())
        after = running.call_tool("fx", "echo", {"text": "hi"}, timeout=10, cancel=CancelToken())
        time.sleep(0.2)
        notices = running.take_notices()
        assert running.take_notices() == []
        server, child = server_pid(pid_file), int(child_file.read_text())
        assert gone(server) and gone(child)  # the child it left behind went with its process group
    assert crashed.unavailable and "stopped (exit code 3) during this call" in crashed.text
    assert after.unavailable and "unavailable (stopped (exit code 3))" in after.text
    assert len(notices) == 1 and notices[0].startswith("MCP server fx stopped (exit code 3)")
    assert "crashing on purpose" in notices[0]  # the tail of its log


def test_closing_stops_every_server_and_what_it_started(workdir: Path) -> None:
    pid_file, child_file = workdir / "server.pid", workdir / "child.pid"
    running = servers(workdir, fixture_spec("fx", "--pid-file", str(pid_file), "--child-pid-file", str(child_file)))
    running.start()
    server, child = server_pid(pid_file), int(wait_for_text(child_file))
    assert alive(server) and alive(child)
    running.close()
    running.close()
    assert gone(server, timeout=1) and gone(child, timeout=1)  # close() returns once they are gone
    assert running.call_tool("fx", "echo", {"text": "x"}, timeout=5, cancel=CancelToken()).unavailable


def test_a_long_result_is_capped_like_a_tool_output(workdir: Path, temp_home: Path) -> None:
    spill = temp_home / "spill"
    context = RuntimeContext(workspace=workdir, settings=ToolSettings(max_output=500), spill_dir=spill)
    with servers(workdir, fixture_spec()) as running:
        running.start()
        result = Executor(Registry(running.tools()), context).execute("fx__big", {"lines": 2000})
    assert result.ok and result.details["truncated"] and len(result.content) < 700
    assert result.content.startswith("line 0\n") and result.content.endswith("line 1999")
    assert Path(result.details["spill_path"]).read_text().splitlines()[-1] == "line 1999"


def test_tool_names_are_valid_function_names() -> None:
    assert tool_name("docs", "search.pages/v2") == "docs__search_pages_v2"
    long_a, long_b = tool_name("srv", "a" * 80), tool_name("srv", "a" * 79 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b


def test_nami_serves_nami_over_http_with_a_token_from_the_environment(workdir: Path) -> None:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "greet.yaml").write_text(
        "name: greet\ndescription: Say hello.\nrisk: read\nparameters:\n  type: object\n"
        "  properties: {who: {type: string}}\n  required: [who]\ncommand: [echo, 'hello {who}']\n")
    with http_server(["--tools", "tools", "--token-env", "NAMI_TEST_TOKEN"], workdir,
                     {"NAMI_TEST_TOKEN": TOKEN}) as (url, _process):
        spec = McpServerSpec("team", url=url, headers={"Authorization": "Bearer ${NAMI_TEST_TOKEN}"})
        wrong = McpServerSpec("wrong", url=url, headers={"Authorization": "Bearer nope"}, startup_timeout=5)
        with servers(workdir, spec, wrong, env={"NAMI_TEST_TOKEN": TOKEN}) as running:
            running.start()
            tools = {tool.name: tool for tool in running.tools()}
            reply = running.call_tool("team", "greet", {"who": "ann"}, timeout=10, cancel=CancelToken())
            notices = running.take_notices()
    assert set(tools) == {"team__greet"} and tools["team__greet"].risk == "read"
    assert reply.ok and reply.text == "hello ann"
    assert len(notices) == 1 and notices[0].startswith("MCP server wrong") and "did not start" in notices[0]


@pytest.mark.parametrize("stop", ["close", "exit"])
def test_no_server_outlives_a_python_process_that_used_it(stop: str, workdir: Path) -> None:
    """Closing explicitly, or just exiting: the atexit hook stops the servers either way."""
    import subprocess

    pid_file = workdir / "server.pid"
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from nami_yaml.config.mcp_servers import McpServerSpec\n"
        "from nami_yaml.mcp.client import McpServers\n"
        "from nami_yaml.sandbox_settings import SandboxNeeds\n"
        f"spec = McpServerSpec('fx', command=sys.executable, args=({str(FIXTURE)!r}, '--pid-file', {str(pid_file)!r}),\n"
        "                      sandbox=SandboxNeeds(reads=('/proc',)))\n"
        "running = McpServers([spec], workspace=Path.cwd(), host_env=os.environ, protected_env=frozenset(), "
        "log_dir=Path.cwd())\n"
        "running.start()\n"
        f"{'running.close()' if stop == 'close' else 'pass'}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert gone(server_pid(pid_file), timeout=1)
