"""A server's resources (one read tool per server, listed in its description, paginated) and prompts (what
chat offers as /SERVER:PROMPT), with the official SDK's server over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.programs import need_mcp

need_mcp()

from nami_yaml.cancel import CancelToken  # noqa: E402
from nami_yaml.registry.executor import Executor  # noqa: E402
from nami_yaml.registry.registry import Registry  # noqa: E402
from nami_yaml.runtime import RuntimeContext  # noqa: E402
from nami_yaml.testing import FakeOpenAIServer, text  # noqa: E402
from tests.mcp.helpers import FIXTURE, fixture_spec, servers  # noqa: E402


def test_resources_are_read_and_listed_through_one_read_tool(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources")) as running:
        running.start()
        tools = {tool.name: tool for tool in running.tools()}
        tool = tools["fx__read_resource"]
        executor = Executor(Registry([tool]), RuntimeContext(workspace=workdir))
        runbook = executor.execute("fx__read_resource", {"uri": "file:///runbook.md"})
        first = executor.execute("fx__read_resource", {})
        second = executor.execute("fx__read_resource", {"cursor": "1"})
        logo = executor.execute("fx__read_resource", {"uri": "file:///logo.png"})
        missing = executor.execute("fx__read_resource", {"uri": "file:///nope"})
    assert tool.risk == "read"
    assert "file:///runbook.md: runbook (text/markdown): What to do when web is down." in tool.description
    assert "and more: call without uri" in tool.description
    assert runbook.content == "1. Check the pods.\n2. Roll back." and runbook.ok
    assert "config://app" in first.content and 'cursor "1"' in first.content
    assert "file:///logo.png" in second.content and "cursor" not in second.content
    assert logo.content.startswith("[binary resource file:///logo.png: image/png, 3,000 bytes]")
    assert not missing.ok and "no resource file:///nope" in missing.content


def test_a_changed_resource_list_is_listed_again_and_the_next_answer_says_so(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources")) as running:
        running.start()
        tool = {tool.name: tool for tool in running.tools()}["fx__read_resource"]
        executor = Executor(Registry([tool]), RuntimeContext(workspace=workdir))
        before = executor.execute("fx__read_resource", {"uri": "config://app"})
        added = running.call_tool("fx", "add_resource", {}, timeout=30, cancel=CancelToken())
        deadline = time.monotonic() + 10
        while "file:///new.md" not in [r.uri for r in running.connections["fx"].resources or ()]:
            assert time.monotonic() < deadline, "the list was never listed again"
            time.sleep(0.05)
        after = executor.execute("fx__read_resource", {"uri": "config://app"})
        later = executor.execute("fx__read_resource", {"uri": "config://app"})
    assert added.ok and "file:///new.md" not in tool.description  # the description stays (prompt caches)
    assert before.content == later.content == '{"replicas": 3}'
    assert after.content == ('{"replicas": 3}\n[the server\'s resources changed since this tool was described; they are '
                             "now: file:///runbook.md, config://app, file:///new.md and more (call without uri to "
                             "list them)]")


def test_a_server_without_resources_gets_no_read_tool(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx")) as running:
        running.start()
        assert "fx__read_resource" not in {tool.name for tool in running.tools()}
        assert running.prompts() == {}


def test_prompts_are_listed_and_got_as_text(workdir: Path) -> None:
    with servers(workdir, fixture_spec("fx", "--resources")) as running:
        running.start()
        prompts = running.prompts()
        got = running.get_prompt("fx", "triage", {"service": "web"})
        refused = running.get_prompt("fx", "nope", {})
        gone = running.get_prompt("other", "triage", {})
    assert list(prompts) == ["fx:triage"] and prompts["fx:triage"].description == "Triage an alert."
    assert got.ok and got.text == "Triage the alert for web: read the runbook first."
    assert not refused.ok and not gone.ok and "unavailable" in gone.text


def test_chat_sends_a_servers_prompt_as_the_persons_message(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    (workdir / "agent.yaml").write_text(
        "mcp_servers:\n  fx:\n    command: " + json.dumps(sys.executable) + "\n"
        f"    args: [{json.dumps(str(FIXTURE))}, --resources]\n")
    fake_openai.add(text("looking"))
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url, NAMI_MODEL="fake-model", DEEPSEEK_API_KEY="k",
               NAMI_CONFIG=str(workdir / "agent.yaml"))
    result = subprocess.run([sys.executable, "-m", "nami_yaml", "chat"], cwd=workdir, env=env, capture_output=True,
                            text=True, timeout=60, input="/help\n/fx:triage service=web\n/fx:triage web\n")
    assert result.returncode == 0, result.stderr
    assert "/fx:triage service=…  Triage an alert." in result.stdout
    assert fake_openai.requests[0]["messages"][-1]["content"] == "Triage the alert for web: read the runbook first."
    assert "/fx:triage: give arguments as name=value" in result.stderr and len(fake_openai.requests) == 1
