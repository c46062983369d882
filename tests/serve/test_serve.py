"""``nami mcp serve`` driven by the SDK's real client, over stdio and over streamable HTTP: the tools and
their schemas, a call, an argument error, a refusal naming its rule, a capped output with its spill file,
and a cancelled long call whose process group is gone; trust, --tools, --approve and the HTTP guards."""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.programs import need_mcp

need_mcp()

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from nami_yaml.cli.main import cli  # noqa: E402
from nami_yaml.registry.loader import load_tools  # noqa: E402
from tests.mcp.helpers import (  # noqa: E402
    NAMI,
    audit_lines,
    gone,
    http_server,
    http_session,
    stdio_session,
    text_of,
    wait_for_text,
)

TOKEN = "t" * 32
TOOLS = {
    "greet.yaml": """\
name: greet
description: Say hello to someone.
risk: read
parameters:
  type: object
  properties:
    who: {type: string, pattern: "^[a-z]+$", description: Who to greet.}
  required: [who]
command: [echo, "hello {who}"]
""",
    "many.yaml": """\
name: many
description: Count from 1 to count, one number a line.
risk: read
parameters:
  type: object
  properties:
    count: {type: integer, minimum: 1}
  required: [count]
command: [seq, 1, "{count}"]
""",
    "sleeper.yaml": """\
name: sleeper
description: Sleep in the background and wait for it, writing both pids first.
risk: exec
parameters:
  type: object
  properties:
    seconds: {type: integer}
    marker: {type: string}
  required: [seconds, marker]
# Pids as the test sees them, from the host's /proc: in the sandbox, $$ and $! are its own namespace's.
sandbox: {reads: [/proc]}
script: |
  sleep "$seconds" &
  read -r shell _ < /proc/self/stat
  read -r child _ < "/proc/$shell/task/$shell/children"
  echo "$shell $child" > "$marker"
  wait
""",
    "deploy.yaml": """\
name: deploy
description: Pretend to deploy.
risk: exec
parameters:
  type: object
  properties:
    service: {type: string}
  required: [service]
command: [echo, "deploying {service}"]
""",
    "remove.yaml": """\
name: remove
description: Pretend to remove a file.
risk: write
parameters:
  type: object
  properties:
    path: {type: string}
  required: [path]
command: [echo, "removing {path}"]
""",
}
AGENT = """\
tools: {builtin: [read_file], files: [tools]}
limits: {max_output: 1000}
audit: {path: audit.jsonl}
rules:
  - {tool: sleeper, decision: allow}
  - {tool: remove, decision: deny, reason: deleting is for people}
"""


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    for name, text in TOOLS.items():
        (workdir / "tools" / name).write_text(text)
    (workdir / "agent.yaml").write_text(AGENT)
    return workdir


def run(scenario: Callable[[], Any]) -> Any:
    return anyio.run(scenario)


async def the_whole_story(session: ClientSession, project: Path) -> None:
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == {"greet", "many", "sleeper", "deploy", "remove"}  # built-ins only with --builtins
    greet = listed["greet"]
    loaded, _ = load_tools([project / "tools" / "greet.yaml"])
    assert greet.input_schema == loaded[0].parameters  # the tool's own schema, exactly as the model gets it
    assert greet.description == "Say hello to someone."
    assert (greet.annotations.read_only_hint, greet.annotations.destructive_hint) == (True, False)
    assert (listed["deploy"].annotations.read_only_hint, listed["deploy"].annotations.destructive_hint) == (False, True)

    hello = await session.call_tool("greet", {"who": "ann"})
    assert not hello.is_error and text_of(hello) == "hello ann"

    invalid = await session.call_tool("greet", {"who": "Ann; rm -rf /"})
    assert invalid.is_error
    assert "invalid arguments for 'greet'" in text_of(invalid) and "$.who" in text_of(invalid)

    denied = await session.call_tool("remove", {"path": "notes.txt"})
    assert denied.is_error
    assert "refused by rule agent.yaml:6:5" in text_of(denied) and "deleting is for people" in text_of(denied)

    asked = await session.call_tool("deploy", {"service": "web"})
    assert asked.is_error and text_of(asked).startswith("Error: refused by permissions.exec: echo 'deploying web'.")
    assert "refused by permissions.exec" in text_of(asked) and "--approve exec" in text_of(asked)

    capped = await session.call_tool("many", {"count": 5000})
    content = text_of(capped)
    assert not capped.is_error and len(content) < 1300
    assert content.startswith("1\n2\n") and content.rstrip().endswith("4999\n5000")
    spill = Path(content.split("full output: ", 1)[1].split("]", 1)[0])
    assert spill.read_text().splitlines() == [str(n) for n in range(1, 5001)]

    marker = project / "sleeping"
    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()

        async def long_call() -> None:
            with scope:
                await session.call_tool("sleeper", {"seconds": 120, "marker": str(marker)})

        group.start_soon(long_call)
        await anyio.to_thread.run_sync(wait_for_text, marker)
        scope.cancel()  # the SDK sends notifications/cancelled for the request
    shell, sleep = map(int, marker.read_text().split())
    assert await anyio.to_thread.run_sync(gone, shell) and await anyio.to_thread.run_sync(gone, sleep)

    still = await session.call_tool("greet", {"who": "bob"})  # the connection goes on after a cancel
    assert text_of(still) == "hello bob"

    # Protocol errors, as the MCP spec has them: JSON-RPC -32602 (invalid params), not tool results.
    with pytest.raises(MCPError) as unknown:
        await session.call_tool("gret", {"who": "ann"})
    assert unknown.value.code == types.INVALID_PARAMS
    assert unknown.value.message == ("unknown tool 'gret'; did you mean 'greet'? The tools of this server: deploy, "
                                     "greet, many, remove, sleeper")
    with pytest.raises(MCPError) as cursor:
        await session.list_tools(params=types.PaginatedRequestParams(cursor="page-2"))
    assert cursor.value.code == types.INVALID_PARAMS
    assert cursor.value.message == ("invalid cursor 'page-2': this server lists all its tools at once, so a list "
                                    "request needs no cursor")


def check_audit(project: Path) -> None:
    lines = audit_lines(project / "audit.jsonl")
    assert {line["via"] for line in lines} == {"mcp"} and {line["client"] for line in lines} == {"nami-tests 1.0"}
    by_tool = [(line["tool"], line["status"], line.get("decided_by")) for line in lines]
    assert ("greet", "invalid", None) in by_tool
    assert ("remove", "denied", "rule agent.yaml:6:5") in by_tool
    assert ("deploy", "denied", "permissions.exec") in by_tool
    sleeper = next(line for line in lines if line["tool"] == "sleeper")
    assert sleeper["status"] == "ran" and sleeper["interrupted"] is True


def test_stdio_serves_the_tools_through_the_policy(project: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "--config", "agent.yaml"], project, errlog) as session:
                await the_whole_story(session, project)

    run(scenario)
    check_audit(project)
    assert "serving 5 tools over stdio" in (tmp_path / "server.err").read_text()


def test_http_serves_the_same_with_a_bearer_token(project: Path) -> None:
    with http_server(["--config", "agent.yaml", "--token-env", "NAMI_TEST_TOKEN"], project,
                     {"NAMI_TEST_TOKEN": TOKEN}) as (url, _process):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=10)
        assert refused.value.code == 401

        async def scenario() -> None:
            async with http_session(url, {"Authorization": f"Bearer {TOKEN}"}) as session:
                await the_whole_story(session, project)

        run(scenario)
    check_audit(project)


def test_approve_lets_the_asked_risk_run(project: Path, tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "-c", "agent.yaml", "--approve", "exec"], project, errlog) as s:
                deployed = await s.call_tool("deploy", {"service": "web"})
                removed = await s.call_tool("remove", {"path": "x"})  # a rule's deny stays a deny
                return [text_of(deployed), text_of(removed)]

    deployed, removed = run(scenario)
    assert deployed == "deploying web"
    assert removed.startswith("Error: refused by rule agent.yaml:6:5")
    assert audit_lines(project / "audit.jsonl")[0]["decided_by"] == "--approve exec"


def test_a_write_that_runs_code_asks_for_exec_as_the_models_call_does(workdir: Path, tmp_path: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {builtin: [write_file]}\n"
                                        "rules:\n  - tool: write_file\n    decision: allow\n")
    (workdir / ".git" / "hooks").mkdir(parents=True)
    hook = {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}

    async def scenario(*approve: str) -> str:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "-c", "agent.yaml", "--builtins", *approve], workdir,
                                     errlog) as s:
                return text_of(await s.call_tool("write_file", hook))

    refused = anyio.run(scenario, "--approve", "write")  # the tool's own risk is not enough
    assert "permissions.exec asks about this call" in refused and "--approve exec" in refused
    assert not (workdir / ".git" / "hooks" / "pre-commit").exists()
    anyio.run(scenario, "--approve", "exec")
    assert (workdir / ".git" / "hooks" / "pre-commit").read_text() == "#!/bin/sh\n"


def test_named_agents_are_served_as_tools_when_asked(workdir: Path, tmp_path: Path) -> None:
    from nami_yaml.testing import FakeOpenAIServer, text

    (workdir / "agent.yaml").write_text("model: {provider: custom, name: fake-model}\ntools: {builtin: [list_dir]}\n"
                                        "agents:\n  reviewer: {description: Reviews things., tools: [list_dir]}\n")
    with FakeOpenAIServer() as server:
        server.add_task("[task]", text("reviewed over MCP"))

        async def scenario(*flags: str) -> tuple[set[str], str | None]:
            os.environ["NAMI_BASE_URL"] = server.base_url
            try:
                with open(tmp_path / "server.err", "w") as errlog:
                    async with stdio_session(["mcp", "serve", "-c", "agent.yaml", *flags], workdir, errlog) as s:
                        listed = {tool.name for tool in (await s.list_tools()).tools}
                        if "agent__reviewer" not in listed:
                            return listed, None
                        return listed, text_of(await s.call_tool("agent__reviewer", {"task": "[task] look"}))
            finally:
                del os.environ["NAMI_BASE_URL"]

        listed, answer = anyio.run(scenario, "--agents")
        assert "agent__reviewer" in listed and answer == "reviewed over MCP"
        assert server.requests[0]["messages"][1]["content"] == "[task] look"
        plain, _ = anyio.run(scenario, "--builtins")
        assert "list_dir" in plain and "agent__reviewer" not in plain


def test_builtins_are_served_only_when_asked(project: Path, tmp_path: Path) -> None:
    async def scenario() -> set[str]:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "-c", "agent.yaml", "--builtins"], project, errlog) as s:
                return {tool.name for tool in (await s.list_tools()).tools}

    assert "read_file" in run(scenario)


def test_an_untrusted_project_refuses_to_start_and_says_why(project: Path) -> None:
    result = subprocess.run([*NAMI, "mcp", "serve"], cwd=project, stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "agent.yaml is not trusted yet" in result.stderr and "nami trust" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_trusted_project_is_served_when_found(project: Path, tmp_path: Path) -> None:
    assert subprocess.run([*NAMI, "trust", "--yes"], cwd=project, capture_output=True, timeout=60).returncode == 0

    async def scenario() -> str:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve"], project, errlog) as session:
                return text_of(await session.call_tool("greet", {"who": "ann"}))

    assert run(scenario) == "hello ann"


def test_tools_serves_a_folder_without_agent_yaml(project: Path, tmp_path: Path) -> None:
    # The untrusted agent.yaml in the folder is not read: only the tool files named are served.
    async def scenario() -> tuple[set[str], str]:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "--tools", "tools"], project, errlog) as session:
                names = {tool.name for tool in (await session.list_tools()).tools}
                return names, text_of(await session.call_tool("remove", {"path": "x"}))

    names, removed = run(scenario)
    assert names == {"greet", "many", "sleeper", "deploy", "remove"}
    assert "refused by permissions.write" in removed  # no agent.yaml: the default permissions ask, nobody answers


def test_a_pinned_target_takes_every_call_and_clients_are_not_offered_the_choice(workdir: Path, tmp_path: Path,
                                                                                temp_home: Path) -> None:
    (workdir / "agent.yaml").write_text(
        "targets:\n  dev: {env: {APP_CONFIG: ~/dev.conf}}\n  prod: {env: {APP_CONFIG: ~/prod.conf}}\n"
        "tools: {builtin: [], files: [where.yaml]}\naudit: {path: audit.jsonl}\n"
        "rules:\n  - {tool: where, args: {target: prod}, decision: deny, reason: not prod}\n")
    (workdir / "where.yaml").write_text("name: where\ndescription: Say where a call runs.\nrisk: read\ntarget: true\n"
                                        "command: [sh, -c, 'echo \"$APP_CONFIG on $NAMI_TARGET\"']\n")

    async def scenario(*flags: str) -> tuple[dict[str, Any], list[str]]:
        with open(tmp_path / "server.err", "w") as errlog:
            async with stdio_session(["mcp", "serve", "-c", "agent.yaml", *flags], workdir, errlog) as session:
                [tool] = (await session.list_tools()).tools
                answers = [text_of(await session.call_tool("where", arguments)) for arguments in
                           ({}, {"target": "prod"})]
                return tool.input_schema, answers

    schema, (pinned, moved) = anyio.run(scenario, "--target", "dev")
    assert "target" not in schema.get("properties", {})
    assert pinned == f"{temp_home}/dev.conf on dev"
    assert "unknown parameter(s) 'target'" in moved  # a client cannot move a pinned server elsewhere
    assert "every call of a targeted tool runs on target dev" in (tmp_path / "server.err").read_text()
    _, (on_prod, _) = anyio.run(scenario, "--target", "prod")
    assert "Error: refused by rule agent.yaml:7:5" in on_prod  # the pinned target is among the arguments decided
    schema, (missing, chosen) = anyio.run(scenario)
    assert schema["properties"]["target"]["enum"] == ["dev", "prod"] and "target" in missing
    assert "refused by rule agent.yaml:7:5" in chosen
    lines = audit_lines(workdir / "audit.jsonl")
    assert [(line.get("target"), line["status"]) for line in lines] == [
        ("dev", "ran"), (None, "invalid"), ("prod", "denied"), (None, "invalid"), (None, "invalid"), ("prod", "denied")]


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--http", "0.0.0.0:8765"], {}, "is not a loopback address"),
    (["--http", "0.0.0.0:8765", "--allow-remote"], {}, "--allow-remote needs --token-env NAME"),
    (["--http", "0.0.0.0:8765", "--allow-remote", "--token-env", "T"], {"T": "short"}, "$T is shorter than 16"),
    (["--http", "127.0.0.1:8765", "--token-env", "T"], {}, "$T is not set"),
    (["--token-env", "T"], {"T": TOKEN}, "--token-env protects --http"),
    (["--http", "8765"], {}, "give HOST:PORT"),
])
def test_http_guards(args: list[str], env: dict[str, str], message: str, project: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["mcp", "serve", "-c", "agent.yaml", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_without_the_extra_it_says_what_to_install(project: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('the mcp SDK is hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    result = subprocess.run([*NAMI, "mcp", "serve", "-c", "agent.yaml"], cwd=project, env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "pip install 'nami_yaml[mcp]'" in result.stderr and "Traceback" not in result.stderr
