"""The Python API: an Agent from an agent.yaml, its trust and approval parameters, run and stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent, ApprovalRequest, Decision
from nami_yaml.app import TrustRequest, UntrustedProject
from nami_yaml.config.trust import trust_store
from nami_yaml.errors import ConfigError
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls, usage


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\nrisk: read\ncommand: [echo, hi]\n")
    (workdir / "agent.yaml").write_text("model: {provider: custom, name: m, base_url: http://127.0.0.1:9/v1}\n"
                                        "tools: {builtin: [write_file, bash], files: [tools/]}\n")
    return workdir


def test_an_untrusted_project_is_refused_with_what_it_adds(project: Path) -> None:
    with pytest.raises(UntrustedProject) as caught:
        Agent.from_config(client=ScriptedModel())
    request = caught.value.request
    assert request.config == project / "agent.yaml" and not request.changed
    assert any("hi (read, command)" in line for line in request.summary)
    assert not trust_store().exists()


def test_a_trust_callable_is_asked_once_and_recorded(project: Path) -> None:
    asked: list[TrustRequest] = []

    def trust(request: TrustRequest) -> bool:
        asked.append(request)
        return True

    Agent.from_config(client=ScriptedModel(), trust=trust)
    Agent.from_config(client=ScriptedModel(), trust=trust)
    assert len(asked) == 1
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hello.\ncommand: [echo, hello]\n")
    Agent.from_config(client=ScriptedModel(), trust=trust)
    assert len(asked) == 2 and asked[1].changed


def test_trust_true_runs_without_recording(project: Path) -> None:
    agent = Agent.from_config(client=ScriptedModel([tool_calls(call("hi", {})), text("said hi")]), trust=True)
    outcome = agent.run("say hi")
    assert outcome.final_text == "said hi" and outcome.messages[-2]["content"] == "hi"
    assert not trust_store().exists()


def test_the_approver_sees_the_plan_and_its_reason_reaches_the_model(project: Path) -> None:
    seen: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Decision:
        seen.append(request)
        return Decision.deny("not on Fridays", source="change freeze")

    model = ScriptedModel([tool_calls(call("bash", {"command": "make deploy"})), text("ok")])
    Agent.from_config(client=model, trust=True, approve=approve).run("deploy")
    [request] = seen
    assert request.name == "bash" and request.risk == "exec" and request.pending.source == "permissions.exec"
    plan = request.plan()
    assert {k: plan[k] for k in ("entrypoint", "arguments")} == {
        "entrypoint": "nami_yaml.builtins.shell:bash", "arguments": {"command": "make deploy"}}
    assert "mode" in plan["sandbox"]  # and the sandbox its command would run in
    tool_message = model.requests[1]["messages"][-1]["content"]
    assert tool_message == ("Denied by change freeze: bash command=\"make deploy\". Reason: not on Fridays. "
                            "Do not retry the same call; ask the user or try another way.")


def test_assume_yes_approves_questions_but_never_a_deny(project: Path) -> None:
    (project / "agent.yaml").write_text(
        "tools: {builtin: [write_file, bash]}\npermissions: {write: ask, exec: deny}\n")
    model = ScriptedModel([
        tool_calls(call("write_file", {"path": "a.txt", "content": "a"}), call("bash", {"command": "touch b"})),
        text("ok"),
    ])
    Agent.from_config(client=model, trust=True, assume_yes=True).run("go")
    written, refused = (m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert (project / "a.txt").read_text() == "a" and not (project / "b").exists()
    assert refused.startswith("Denied by permissions.exec: bash command=\"touch b\". Reason: exec tools are not allowed")


def test_without_an_approver_writes_are_refused(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("write_file", {"path": "a.txt", "content": "a"})), text("ok")])
    Agent.from_config(client=model, trust=True).run("go")
    assert not (project / "a.txt").exists()
    assert "there is no one to ask" in model.requests[1]["messages"][-1]["content"]


def test_runs_continue_the_conversation_and_reset_forgets_it(project: Path) -> None:
    model = ScriptedModel(["first answer", "second answer", "fresh answer"])
    events: list[Any] = []
    agent = Agent.from_config(client=model, trust=True, on_event=events.append)
    agent.run("one")
    agent.run("two")
    assert [m["role"] for m in model.requests[1]["messages"]] == ["system", "user", "assistant", "user"]
    agent.reset()
    agent.run("three")
    assert [m["content"] for m in model.requests[2]["messages"]][1:] == ["three"]
    assert [e.reason for e in events if e.type == "history_replace"] == ["clear"]


def test_stream_yields_the_events_json_prints(project: Path, fake_openai: FakeOpenAIServer) -> None:
    script = [tool_calls(call("hi", {})), text("Said hi.")]
    fake_openai.add(*script)
    agent = Agent.from_config(base_url=fake_openai.base_url, trust=True)
    streamed = [event.to_json() for event in agent.stream("say hi")]

    fake_openai.add(*script)
    (project / "trusted").mkdir()
    env = {**os.environ, "NAMI_BASE_URL": fake_openai.base_url}
    result = subprocess.run([sys.executable, "-m", "nami_yaml", "run", "--json", "--config", "agent.yaml", "say hi"],
                            cwd=project, env=env, capture_output=True, text=True, timeout=60)
    printed = [json.loads(line) for line in result.stdout.splitlines()]

    def shape(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
        return [(e["type"], e.get("name") or e.get("text") or e.get("status")) for e in events
                if e["type"] != "text_delta"]

    assert shape(streamed) == shape(printed)
    assert streamed[-1]["type"] == "final" and streamed[-1]["text"] == "Said hi."


def test_leaving_the_stream_early_cancels_the_run(project: Path) -> None:
    (project / "tools" / "slow.yaml").write_text(
        f"name: slow\ndescription: Sleep.\nrisk: read\ncommand: [{sys.executable}, -c, 'import time; time.sleep(30)']\n")
    model = ScriptedModel([tool_calls(call("slow", {})), text("never")])
    agent = Agent.from_config(client=model, trust=True)
    for event in agent.stream("wait"):
        if event.type == "tool_call":
            break
    assert model.remaining == 1  # the second request was never made
    assert agent.messages[-1]["role"] == "tool" and "Interrupted" in agent.messages[-1]["content"]


def test_the_library_prints_nothing(project: Path, capfd: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel([tool_calls(call("hi", {}), call("bash", {"command": "true"})), text("done")])
    Agent.from_config(client=model, trust=True).run("go")
    assert capfd.readouterr() == ("", "")


def test_usage_not_reported_by_the_server_is_estimated_and_says_so(workdir: Path) -> None:
    silent = Agent.from_config(client=ScriptedModel([tool_calls(call("list_dir", {}), usage=None),
                                                      text("done", usage=None)]))
    events = list(silent.stream("look"))
    final = events[-1].to_json()
    assert final["usage_reported"] is False and final["totals"]["estimated_requests"] == 2
    # One family of counts: the final event's usage is the totals' tokens (here, estimates).
    assert final["usage"]["prompt_tokens"] == final["totals"]["prompt_tokens"] > 0
    counted = Agent.from_config(client=ScriptedModel([tool_calls(call("list_dir", {}), usage=None), text("done")]))
    outcome = counted.run("look")
    assert outcome.usage.reported is True and outcome.usage.prompt_tokens == outcome.totals["prompt_tokens"] > 0


def test_one_count_of_tokens_for_a_run(workdir: Path) -> None:
    model = ScriptedModel([tool_calls(call("list_dir", {}), usage=usage(120, 7)), text("done", usage=usage(300, 11))])
    agent = Agent.from_config(client=model)
    events = list(agent.stream("look"))
    final = events[-1].to_json()
    per_step = [e.to_json() for e in events if e.type == "usage"]
    assert [u["prompt_tokens"] for u in per_step] == [120, 300]
    assert final["usage"]["prompt_tokens"] == final["totals"]["prompt_tokens"] == 420
    assert final["usage"]["completion_tokens"] == final["totals"]["completion_tokens"] == 18
    assert agent.meter.session.prompt_tokens == 420 and final["usage_reported"] is True


def test_from_config_pins_a_target(project: Path) -> None:
    with (project / "agent.yaml").open("a") as config:
        config.write("targets: {dev: {vars: {name: dev-eu}}, prod: {vars: {name: prod-eu}}}\n")
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\nrisk: read\ntarget: true\n"
                                               "command: [echo, hi, '{target.name}']\n")
    model = ScriptedModel([tool_calls(call("hi", {})), text("done")])
    agent = Agent.from_config(client=model, trust=True, target="prod")
    assert "target" not in agent.registry.get("hi").parameters["properties"]
    agent.run("go")
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == ["hi prod-eu"]
    with pytest.raises(ConfigError, match="no target is named so"):
        Agent.from_config(client=model, trust=True, target="staging")


def test_use_model_points_every_piece_at_the_new_model_and_its_prices(workdir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "agent.yaml").write_text("model: {provider: deepseek, name: deepseek-chat}\n"
                                        "limits: {max_cost: 1}\ntools: {builtin: [list_dir]}\n")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    agent = Agent.from_config(client=ScriptedModel(), trust=True)
    limit = next(hook for hook in agent.hooks.before_request if type(hook).__name__ == "CostLimit")
    before = (agent.model, agent.pricing, agent.settings.get("model.name"))
    # No price for that name with limits.max_cost set: refused, and nothing changes.
    with pytest.raises(ConfigError, match="limits.max_cost needs prices"):
        agent.use_model("no-such-model")
    assert (agent.model, agent.pricing, agent.settings.get("model.name")) == before
    assert agent.loop.model is agent.compactor.model is before[0] and limit.pricing is before[1]
    agent.use_model("deepseek-reasoner")
    assert agent.settings.get("model.name") == "deepseek-reasoner" and agent.model is not before[0]
    assert agent.loop.model is agent.compactor.model is agent.model
    assert agent.meter.price is agent.pricing is limit.pricing and agent.pricing is not None
