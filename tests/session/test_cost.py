"""Token accounting and cost: per request and per run, reported or estimated, priced by the presets or
agent.yaml, and limits.max_cost stopping a run before the request that would pass it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.config.settings import load_settings
from nami_yaml.errors import ConfigError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.session.cost import Pricing
from nami_yaml.session.loader import load_session
from nami_yaml.session.store import SessionStore
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls, usage
from tests.helpers import run_nami

PRICED = "model: {{provider: custom, name: fake-model, pricing: {{input: {input}, cached_input: 0.5, output: 10}}}}\n{extra}"


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_pricing_counts_cached_input_apart_and_defaults_it_to_input() -> None:
    price = Pricing(input=2.0, output=8.0, cached_input=0.5)
    assert price.cost(1_000_000, 400_000, 100_000) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 8)
    assert Pricing(input=2.0, output=8.0).cost(1_000_000, 400_000, 0) == pytest.approx(2.0)
    assert Pricing.from_settings(None) is None


def test_presets_price_their_models_and_agent_yaml_overrides(workdir: Path) -> None:
    effective = load_settings(ProjectRequest(cwd=workdir, env={}))
    assert effective.get("model.pricing") == {"input": 0.28, "cached_input": 0.028, "output": 0.42}
    assert effective.sources["model.pricing"].startswith("preset deepseek (list price of 20")
    mini = load_settings(ProjectRequest(cwd=workdir, env={"NAMI_MODEL": "gpt-4.1-mini"}, flags={"model.provider": "openai"}))
    assert mini.get("model.pricing") == {"input": 0.40, "cached_input": 0.10, "output": 1.60}
    assert load_settings(ProjectRequest(cwd=workdir, env={"NAMI_MODEL": "my-finetune"})).get("model.pricing") is None
    (workdir / "agent.yaml").write_text("model: {pricing: {input: 1, output: 3}}\n")
    assert load_settings(ProjectRequest("agent.yaml", cwd=workdir, env={})).get("model.pricing") == {"input": 1, "output": 3}


def test_a_run_reports_totals_and_cost_in_the_final_event_and_on_stderr(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text(PRICED.format(input=2, extra=""))
    script = [tool_calls(call("list_dir", {}), usage=usage(1000, 100, 600, reasoning=40)),
              text("done", usage=usage(1500, 50, 1000))]
    with FakeOpenAIServer(script) as server:
        result = run_nami(server, "run", "--json", "look", cwd=workdir, env={"NAMI_CONFIG": "agent.yaml"})
        human = FakeOpenAIServer([*script])
        with human:
            plain = run_nami(human, "run", "look", cwd=workdir, env={"NAMI_CONFIG": "agent.yaml"})
    assert result.returncode == 0, result.stderr
    final = events(result.stdout)[-1]
    cost = (400 * 2 + 600 * 0.5 + 100 * 10 + 500 * 2 + 1000 * 0.5 + 50 * 10) / 1e6
    assert final["totals"] == {"steps": 2, "requests": 2, "prompt_tokens": 2500, "cached_tokens": 1600,
                               "completion_tokens": 150, "reasoning_tokens": 40, "estimated": False,
                               "estimated_requests": 0, "cost": pytest.approx(cost), "cost_complete": True}
    assert plain.stderr.splitlines()[-1] == ("tokens: 2,500 in (1,600 cached), 150 out (40 reasoning), 2 steps, "
                                             f"${cost:.4f}")
    for session_id in SessionStore().ids():  # one session per run, each with its cost
        assert load_session(SessionStore().path(session_id)).totals.cost == pytest.approx(cost)


@pytest.mark.parametrize("stream", [True, False])
def test_usage_the_server_does_not_report_is_estimated_and_marked(stream: bool, workdir: Path) -> None:
    (workdir / "agent.yaml").write_text(PRICED.format(input=2, extra=""))
    flags = [] if stream else ["--no-stream"]
    with FakeOpenAIServer([tool_calls(call("list_dir", {}), usage=None), text("done", usage=usage(900, 10))]) as server:
        result = run_nami(server, "run", "--json", *flags, "look", cwd=workdir, env={"NAMI_CONFIG": "agent.yaml"})
    assert result.returncode == 0, result.stderr
    final = events(result.stdout)[-1]
    totals = final["totals"]
    assert totals["estimated"] is True and totals["estimated_requests"] == 1
    assert final["usage"]["prompt_tokens"] == totals["prompt_tokens"]  # one count: the totals' tokens
    sent = len(server.raw_requests[0])  # the estimate is of the request's size, about 4 characters a token
    assert sent // 6 < totals["prompt_tokens"] - 900 < sent // 2


def test_max_cost_stops_the_run_before_the_request_that_would_pass_it(workdir: Path) -> None:
    # $10 per million input tokens and 500 reported for each step: $0.005 a step, so a $0.012 limit allows
    # two steps and stops before the third.
    (workdir / "agent.yaml").write_text(PRICED.format(
        input=10, extra="limits: {max_cost: 0.012}\ntools: {builtin: [list_dir]}\n"))
    steps = [tool_calls(call("list_dir", {}), usage=usage(500, 5)) for _ in range(5)]
    with FakeOpenAIServer([*steps, text("never")]) as server:
        result = run_nami(server, "run", "--json", "look forever", cwd=workdir, env={"NAMI_CONFIG": "agent.yaml"})
    assert result.returncode == 3, result.stderr
    final = events(result.stdout)[-1]
    assert final["status"] == "max_cost"
    assert "would pass limits.max_cost ($0.0120)" in final["error"] and "nami run" not in final["error"]
    spent = final["totals"]["cost"]
    assert spent <= 0.012 and len(server.requests) == final["totals"]["requests"] == 2
    assert spent + (500 * 10 + 5 * 10) / 1e6 > 0.012  # one more request would have passed it
    with FakeOpenAIServer([*steps, text("never")]) as server:  # a person is told how to go on
        shown = run_nami(server, "run", "look forever", cwd=workdir, env={"NAMI_CONFIG": "agent.yaml"})
    assert shown.returncode == 3 and 'Raise limits.max_cost and let the agent go on with `nami run --continue' in shown.stderr


def test_max_cost_needs_a_price(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("model: {provider: custom, name: m, base_url: http://127.0.0.1:9/v1}\n"
                                        "limits: {max_cost: 1}\n")
    with pytest.raises(ConfigError, match=r"agent.yaml:2:\d+: \$.limits.max_cost: limits.max_cost needs prices"):
        Agent.from_config("agent.yaml", client=ScriptedModel())


def test_per_run_and_per_session_totals_and_chat_cost(workdir: Path) -> None:
    model = ScriptedModel([text("a", usage=usage(100, 10)), text("b", usage=usage(200, 20))])
    agent = Agent.from_config(client=model)
    first = agent.run("one")
    second = agent.run("two")
    assert first.totals["prompt_tokens"] == 100 and second.totals["prompt_tokens"] == 200
    assert agent.meter.session.prompt_tokens == 300 and agent.meter.session.steps == 2

    # Priced by agent.yaml: a local server ($NAMI_BASE_URL) has no list price of its own.
    (workdir / "agent.yaml").write_text("model: {pricing: {input: 0.28, output: 0.42}}\n")
    with FakeOpenAIServer([text("hi", usage=usage(100, 10))]) as server:
        result = run_nami(server, "chat", cwd=workdir, stdin="hello\n/cost\n", env={"NAMI_CONFIG": "agent.yaml"})
    assert result.returncode == 0, result.stderr
    assert "session " in result.stdout and ": 100 in, 10 out, 1 step, $0.0000" in result.stdout
