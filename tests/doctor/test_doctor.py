"""`nami doctor`'s checks against real files, real programs on PATH and the real HTTP fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import cli
from nami_yaml.config.settings import load_settings
from nami_yaml.config.trust import remember, trust_state
from nami_yaml.doctor import FAIL, OK, WARN, Check, run_doctor
from nami_yaml.project_request import ProjectRequest
from nami_yaml.testing import FakeOpenAIServer, call, error, text, tool_calls
from tests.helpers import programs_on_path
from tests.local_http import QuietHandler, serving

KEY = "sk-test-0123456789abcdef"


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def write_project(folder: Path, base_url: str, model: str = "fake-model", program: str = "echo") -> None:
    (folder / "tools").mkdir(exist_ok=True)
    (folder / "agent.yaml").write_text(
        f"model: {{provider: custom, base_url: '{base_url}', name: {model}, api_key_env: TEST_LLM_KEY}}\n"
        "tools: {builtin: [read_file, grep], files: [tools/]}\n")
    (folder / "tools" / "hello.yaml").write_text(
        f"name: hello\ndescription: Say hello.\nrisk: read\ncommand: [{program}, hello]\n")


def trust(folder: Path) -> None:
    remember(trust_state(load_settings(ProjectRequest(env=os.environ, cwd=folder))))


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch, temp_home: Path) -> None:
    monkeypatch.setenv("TEST_LLM_KEY", KEY)
    monkeypatch.setenv("XDG_DATA_HOME", str(temp_home / ".local" / "share"))


def test_a_ready_project_passes(workdir: Path, key: None) -> None:
    with FakeOpenAIServer(models=["fake-model", "other"]) as server:
        write_project(workdir, server.base_url)
        trust(workdir)
        checks = by_name(run_doctor())
    assert checks["config"].status == OK and str(workdir / "agent.yaml") in checks["config"].message
    # two built-ins, the project's tool, and tool_docs (the built-ins have docs on demand)
    assert (checks["tools"].status, checks["tools"].message) == (OK, "4 tools load")
    assert (checks["trust"].status, checks["trust"].message) == (OK, "trusted as it is now")
    assert (checks["api key"].status, checks["api key"].message) == (OK, "sk-…ef from $TEST_LLM_KEY")
    assert checks["endpoint"].status == OK and "(2 models," in checks["endpoint"].message
    assert (checks["model"].status, checks["model"].message) == (OK, "fake-model is listed by the server")
    assert (checks["programs"].status, checks["programs"].message) == (OK, "all found: echo")
    assert checks["folders"].status == OK
    assert "live" not in checks and "schemas" not in checks


def test_a_model_the_server_does_not_list_fails_with_a_hint(workdir: Path, key: None) -> None:
    # 127.0.0.2 is this machine too, but not a name nami takes for a local server
    with FakeOpenAIServer(models=["deepseek-chat", "deepseek-reasoner"], host="127.0.0.2") as server:
        write_project(workdir, server.base_url, model="deepseek-caht")
        trust(workdir)  # an untrusted agent.yaml's endpoint is never contacted
        model = by_name(run_doctor())["model"]
    assert model.status == FAIL
    assert model.message == "deepseek-caht is not among the models the server lists; did you mean deepseek-chat?"
    assert model.details == ["listed: deepseek-chat, deepseek-reasoner"]


def test_the_readmes_offline_recipe_passes_with_a_warning(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`nami init`'s agent.yaml (DeepSeek, not trusted yet) with $NAMI_BASE_URL at the fake server: the
    endpoint the environment chose is checked before trust, and a local server that lists other names
    (the fake server, llama.cpp, which answer any) is a warning naming them, not a failure."""
    assert CliRunner().invoke(cli, ["init", "--library", "jq"]).exit_code == 0
    monkeypatch.setenv("PATH", programs_on_path(workdir.parent / "bin", "jq"))  # doctor checks jq is there
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("NAMI_BASE_URL", server.base_url)
        result = CliRunner().invoke(cli, ["doctor"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"OK    endpoint  {server.base_url} answers (1 model, " in result.output
    assert ("WARN  model     deepseek-chat is not among the models this local server lists (fake-model); many "
            "answer any name, else set $NAMI_MODEL or model.name to one of them") in lines
    assert any(line.startswith("WARN  trust     not trusted yet") for line in lines)


def test_an_endpoint_that_does_not_answer(workdir: Path, key: None) -> None:
    with FakeOpenAIServer() as server:
        closed = server.base_url
    write_project(workdir, closed)
    trust(workdir)
    checks = by_name(run_doctor(timeout=2))
    assert checks["endpoint"].status == FAIL
    assert checks["endpoint"].message.startswith(f"cannot reach {closed}/models: ")
    assert checks["endpoint"].message.endswith("(is the local server running?)")
    assert checks["model"].status == WARN


class _Refusing(QuietHandler):
    status = 401

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.reply(self.status, b"<html>nope</html>" if self.status == 200 else b'{"error": {"message": "bad key"}}')


@pytest.fixture
def answering(request: pytest.FixtureRequest) -> Iterator[str]:
    with serving(type("Handler", (_Refusing,), {"status": request.param})) as url:
        yield f"{url}/v1"


@pytest.mark.parametrize(("answering", "status", "message"), [
    (401, FAIL, "refused the API key (HTTP 401 Unauthorized); check $TEST_LLM_KEY"),
    (404, WARN, "gave HTTP 404 Not Found"),
    (200, WARN, "gave the answer is not a model list"),
    (502, FAIL, "gave HTTP 502 Bad Gateway"),
], indirect=["answering"])
def test_what_the_endpoint_answers(workdir: Path, key: None, answering: str, status: str, message: str) -> None:
    write_project(workdir, answering)
    trust(workdir)
    checks = by_name(run_doctor())
    assert checks["endpoint"].status == status
    assert message in checks["endpoint"].message
    assert checks["model"].status == WARN


def test_live_asks_for_a_tool_call(workdir: Path, key: None) -> None:
    with FakeOpenAIServer([tool_calls(call("nami_doctor_ping", {"text": "ok"})), text("pong"),
                           error(500, "overloaded")]) as server:
        write_project(workdir, server.base_url)
        trust(workdir)
        called = by_name(run_doctor(live=True))["live"]
        chatted = by_name(run_doctor(live=True))["live"]
        failed = by_name(run_doctor(live=True))["live"]
        sent = server.requests[0]
    assert called.status == OK and called.message.startswith("fake-model answered with a tool call (")
    assert chatted.status == WARN and chatted.details == ["it said: pong"]
    assert failed.status == FAIL
    assert [t["function"]["name"] for t in sent["tools"]] == ["nami_doctor_ping"]
    assert sent["model"] == "fake-model"
    assert sent.headers["authorization"] == f"Bearer {KEY}"


def test_live_is_not_tried_when_the_endpoint_is_down(workdir: Path, key: None) -> None:
    write_project(workdir, "http://127.0.0.1:9/v1")
    trust(workdir)
    live = by_name(run_doctor(live=True, timeout=2))["live"]
    assert (live.status, live.message) == (WARN, "not tried: the endpoint did not answer")


def test_problems_of_this_project(workdir: Path, temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(temp_home / "data"))
    write_project(workdir, "http://192.0.2.1:9/v1", program="no-such-program-here")  # not local: a key is needed
    checks = by_name(run_doctor(timeout=1))
    assert checks["api key"].status == FAIL
    assert checks["api key"].message == "not set: export TEST_LLM_KEY=... (the endpoint is http://192.0.2.1:9/v1)"
    assert checks["trust"].status == WARN and checks["trust"].message.startswith("not trusted yet")
    assert (checks["programs"].status, checks["programs"].details) == (
        FAIL, ["no-such-program-here: needed by hello"])
    (workdir / "tools" / "broken.yaml").write_text("name: broken\ndescription: 5\ncomand: [x]\n")
    tools = by_name(run_doctor(timeout=1))["tools"]
    assert tools.status == FAIL and tools.message == "some tool files are not valid: 3 problems"
    assert tools.details[0].startswith("tools/broken.yaml:")
    (workdir / "agent.yaml").write_text("model: {temprature: 1}\n")
    config = by_name(run_doctor(timeout=1))["config"]
    assert config.status == FAIL
    assert config.details == ["agent.yaml:1:9: $.model.temprature: unknown key 'temprature'; did you mean "
                              "'temperature'?"]


def test_a_changed_project_names_what_changed(workdir: Path, key: None) -> None:
    write_project(workdir, "http://127.0.0.1:9/v1")
    trust(workdir)
    (workdir / "tools" / "new.yaml").write_text("name: new\ndescription: New.\ncommand: [echo, new]\n")
    check = by_name(run_doctor(timeout=1))["trust"]
    assert check.status == WARN
    assert check.message.startswith("changed since you trusted it (tools/new.yaml added): its tools run once")


def test_no_project_and_unwritable_folders(workdir: Path, temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = temp_home / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    monkeypatch.setenv("XDG_DATA_HOME", str(temp_home / "data"))
    checks = by_name(run_doctor(timeout=1))
    assert checks["config"].status == WARN and "no agent.yaml here or above" in checks["config"].message
    assert "trust" not in checks
    assert checks["folders"].status == FAIL
    assert checks["folders"].message == f"cannot write: {blocker} is not a folder"


def test_stale_schema_copies_warn(workdir: Path, key: None) -> None:
    write_project(workdir, "http://127.0.0.1:9/v1")
    (workdir / ".nami" / "schemas").mkdir(parents=True)
    (workdir / ".nami" / "schemas" / "tool.schema.json").write_text("{}")
    schemas = by_name(run_doctor(timeout=1))["schemas"]
    assert schemas.status == WARN
    assert schemas.message.startswith(".nami/schemas/tool.schema.json differ from this nami's schemas")


def test_the_command_prints_one_line_per_check_and_fails_on_a_failure(workdir: Path, key: None) -> None:
    with FakeOpenAIServer() as server:
        write_project(workdir, server.base_url)
        trust(workdir)
        result = CliRunner().invoke(cli, ["doctor"])
        as_json = CliRunner().invoke(cli, ["doctor", "--json"])
    lines = result.output.splitlines()
    assert "OK    endpoint  " + server.base_url in "\n".join(lines)
    assert any(line.startswith("OK    api key   sk-…ef from $TEST_LLM_KEY") for line in lines)
    assert KEY not in result.output and KEY not in as_json.output
    data = json.loads(as_json.output)
    assert data["ok"] is (result.exit_code == 0)
    assert [c["name"] for c in data["checks"]][:3] == ["python", "config", "tools"]
    write_project(workdir, server.base_url, program="no-such-program-here")
    trust(workdir)
    failing = CliRunner().invoke(cli, ["doctor", "--timeout", "1"])
    assert failing.exit_code == 1
    assert "FAIL  programs" in failing.output and failing.output.splitlines()[-1].startswith("2 failed")


def test_doctor_without_live_imports_no_openai(workdir: Path, key: None) -> None:
    write_project(workdir, "http://127.0.0.1:9/v1")
    code = ("import sys\nfrom nami_yaml.doctor import run_doctor\nrun_doctor(timeout=1)\n"
            "print('openai' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=workdir)
    assert result.stdout.strip() == "False", result.stderr


class _Recording(QuietHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.seen.append(f"{self.path} {self.headers.get('Authorization')}")
        self.reply(200, b'{"object": "list", "data": [{"id": "fake-model"}]}')

    do_POST = do_GET  # noqa: N815


def test_an_untrusted_project_never_gets_the_key(workdir: Path, key: None) -> None:
    """A cloned repository's agent.yaml chose the endpoint and the key variable (any variable:
    OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY…), and `nami doctor` sent that key to it before any trust."""
    seen: list[str] = []
    with serving(type("Handler", (_Recording,), {"seen": seen})) as url:
        write_project(workdir, f"{url}/v1")
        checks = by_name(run_doctor(live=True))
        assert seen == []
        endpoint = checks["endpoint"]
        assert endpoint.status == WARN and endpoint.message.startswith(
            "not checked: agent.yaml chooses the model's base_url, provider, api_key_env and is not trusted")
        assert "model" not in checks and "live" not in checks
        trust(workdir)
        assert by_name(run_doctor())["endpoint"].status == OK
        assert seen == [f"/v1/models Bearer {KEY}"]  # once trusted, the key goes where the file says


def test_an_untrusted_project_choosing_the_key_variable_waits_even_for_an_endpoint_of_the_environment(
        workdir: Path, key: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    with serving(type("Handler", (_Recording,), {"seen": seen})) as url:
        write_project(workdir, "https://llm.example.com/v1")  # chooses api_key_env: TEST_LLM_KEY too
        monkeypatch.setenv("NAMI_BASE_URL", f"{url}/v1")
        endpoint = by_name(run_doctor())["endpoint"]
    assert endpoint.status == WARN and endpoint.message.startswith("not checked: agent.yaml chooses")
    assert seen == []


def test_mcp_servers_without_the_extra_fail_with_what_to_install(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("mcp_servers:\n  fx: {command: nothing-here}\n")
    blocked = ("import sys; sys.modules['mcp'] = None\n"  # as on a machine without the extra
               "from nami_yaml.doctor import run_doctor\n"
               "check = next(c for c in run_doctor(timeout=1) if c.name == 'mcp')\n"
               "print(check.status, check.message)\n")
    shown = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, check=True).stdout
    assert shown.startswith(f"{FAIL} agent.yaml's mcp_servers needs the MCP SDK") and "pip install" in shown
