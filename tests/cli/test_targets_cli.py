"""Targets as a user meets them: a real ``nami`` process, the real openai SDK and the fake server. The model
sees the target names as an enum; the chosen target's env reaches the tool's process; ``--target`` takes
the choice away; a deny on prod holds while dev runs; the audit log records the target and ``nami log
--target`` filters by it; ``nami doctor --target`` checks a target's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import run_nami, write

AGENT = """\
targets:
  dev:  {env: {APP_CONFIG: ~/dev.conf}, vars: {context: dev-eu}}
  prod: {env: {APP_CONFIG: ~/prod.conf}, vars: {context: prod-eu}}
tools: {builtin: [], files: [tools/]}
rules:
  - {tool: where, args: {target: prod}, decision: deny, reason: nothing runs on prod from here}
"""
WHERE = """\
name: where
description: Say which environment a call runs in.
risk: read
target: true
command: [sh, -c, 'echo "config=$APP_CONFIG target=$NAMI_TARGET context=$0"', "{target.context}"]
"""


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "agent.yaml", AGENT)
    write(workdir / "tools" / "where.yaml", WHERE)
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    return workdir


def schema_sent(server: FakeOpenAIServer, name: str = "where") -> dict[str, Any]:
    tool = next(t for t in server.requests[0]["tools"] if t["function"]["name"] == name)
    return tool["function"]["parameters"]


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_the_model_chooses_a_target_from_the_enum_and_a_deny_on_prod_holds_while_dev_runs(
        fake_openai: FakeOpenAIServer, project: Path, temp_home: Path) -> None:
    fake_openai.add(tool_calls(call("where", {"target": "dev"}, id="c1"), call("where", {"target": "prod"}, id="c2")),
                    text("done"))
    result = run_nami(fake_openai, "run", "where do you run?", cwd=project)
    assert result.returncode == 0, result.stderr
    schema = schema_sent(fake_openai)
    assert schema["properties"]["target"]["enum"] == ["dev", "prod"] and schema["required"] == ["target"]
    dev, prod = tool_results(fake_openai.requests[1])
    assert dev == f"config={temp_home}/dev.conf target=dev context=dev-eu"
    assert "Denied by rule agent.yaml:6:5" in prod and "nothing runs on prod from here" in prod
    lines = [json.loads(line) for line in default_audit_path().read_text().splitlines()]
    assert [(line["target"], line["status"]) for line in lines] == [("dev", "ran"), ("prod", "denied")]
    on_prod = run_nami(None, "log", "--target", "prod", cwd=project)
    shown = on_prod.stdout.splitlines()
    assert len(shown) == 2 and " denied   where on prod " in shown[1], on_prod.stdout


def test_a_pinned_target_is_not_offered_and_every_call_runs_there(fake_openai: FakeOpenAIServer, project: Path,
                                                                  temp_home: Path) -> None:
    fake_openai.add(tool_calls(call("where", {})), tool_calls(call("where", {"target": "prod"})), text("done"))
    result = run_nami(fake_openai, "run", "--target", "dev", "where?", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "target" not in schema_sent(fake_openai)["properties"]
    assert tool_results(fake_openai.requests[1]) == [f"config={temp_home}/dev.conf target=dev context=dev-eu"]
    refused = tool_results(fake_openai.requests[2])[-1]
    assert "unknown parameter(s) 'target'" in refused  # the model cannot move a pinned run elsewhere
    # pinned to prod, the rule on target: prod holds: the pinned target is among the arguments the policy sees
    fake_openai.add(tool_calls(call("where", {})), text("done"))
    pinned_prod = run_nami(fake_openai, "run", "--target", "prod", "where?", cwd=project)
    assert pinned_prod.returncode == 0, pinned_prod.stderr
    assert "Denied by rule agent.yaml:6:5" in tool_results(fake_openai.requests[-1])[-1]
    lines = [json.loads(line) for line in default_audit_path().read_text().splitlines()]
    assert [(line["target"], line["arguments"], line["status"]) for line in lines if "target" in line] == [
        ("dev", {"target": "dev"}, "ran"), ("prod", {"target": "prod"}, "denied")]


def test_an_unknown_pinned_target_is_a_usage_error(project: Path) -> None:
    result = run_nami(None, "run", "--target", "staging", "hi", cwd=project, env={"NAMI_API_KEY": "sk-test"})
    assert result.returncode == 2
    assert "cannot run on target 'staging': no target is named so (targets: dev, prod)" in result.stderr
    assert "Traceback" not in result.stderr


def test_doctor_checks_the_files_a_target_names_without_running_anything(project: Path, temp_home: Path) -> None:
    (temp_home / "dev.conf").write_text("x")
    dev = run_nami(None, "doctor", "--target", "dev", "--json", cwd=project)
    checks = {c["name"]: c for c in json.loads(dev.stdout)["checks"]}
    assert checks["target dev env"]["status"] == "ok"
    assert checks["target dev programs"]["status"] == "ok"
    prod = run_nami(None, "doctor", "--target", "prod", "--json", cwd=project)
    found = {c["name"]: c for c in json.loads(prod.stdout)["checks"]}["target prod env"]
    assert found["status"] == "fail" and found["details"] == [f"APP_CONFIG: {temp_home}/prod.conf does not exist"]
    assert prod.returncode == 1
    assert not default_audit_path().exists()  # no tool ran


def test_the_trust_summary_and_tools_show_name_the_targets(project: Path, temp_home: Path) -> None:
    summary = run_nami(None, "trust", cwd=project).stdout
    assert "  sets 2 targets, whose env the calls on each get:\n" in summary
    assert f"    prod: APP_CONFIG={temp_home}/prod.conf\n" in summary
    shown = run_nami(None, "tools", "show", "where", cwd=project).stdout
    assert "targets:    dev, prod (the model chooses)\n" in shown


def test_context_counts_the_requests_of_a_pinned_target_as_run_sends_them(fake_openai: FakeOpenAIServer,
                                                                         project: Path) -> None:
    free = json.loads(run_nami(None, "context", "--json", cwd=project).stdout)
    pinned = run_nami(None, "context", "--json", "--target", "dev", cwd=project)
    assert pinned.returncode == 0, pinned.stderr
    counted = json.loads(pinned.stdout)
    assert (free["target"], counted["target"]) == (None, "dev")
    fake_openai.add(text("done"))
    assert run_nami(fake_openai, "run", "--target", "dev", "hi", cwd=project).returncode == 0
    [sent] = fake_openai.requests[0]["tools"]
    chars = {p["label"]: p["chars"] for p in counted["parts"]}
    assert chars["tool where"] == len(json.dumps(sent, ensure_ascii=False, separators=(",", ":")))
    assert chars["tool where"] < {p["label"]: p["chars"] for p in free["parts"]}["tool where"]
    table = run_nami(None, "context", "--target", "dev", cwd=project).stdout
    assert ("every call of a targeted tool runs on target dev (--target): where is sent without its target "
            "parameter\n") in table
    unknown = run_nami(None, "context", "--target", "staging", cwd=project)
    assert unknown.returncode == 2 and "no target is named so (targets: dev, prod)" in unknown.stderr
