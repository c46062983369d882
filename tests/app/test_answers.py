"""Structured answers through the Python API: the schema told to the model (response_format or the system
prompt, by the preset's quirk), the answer read and validated, mismatches sent back until the retries run
out, and the value on the outcome and in the final event. Driven by the in-memory ScriptedModel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.app.agent import build_model
from nami_yaml.app.answers import read_answer, structured_answers
from nami_yaml.config.settings import load_settings
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.helpers import write

STATUS = {"type": "object", "properties": {"status": {"enum": ["ok", "failed"]}, "pods": {"type": "integer"}},
          "required": ["status"]}


def agent(*script: Any, **options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(script))
    return Agent.from_config(client=model, discover=False, **options), model


@pytest.mark.parametrize(("answer", "value"), [
    ('{"status": "ok"}', {"status": "ok"}),
    ('  [1, 2]\n', [1, 2]),
    ('"plain"', "plain"),
    ('Here it is:\n```json\n{"status": "ok"}\n```\nAnything else?', {"status": "ok"}),
    ('~~~\n{"a": 1}\n~~~', {"a": 1}),
])
def test_an_answer_is_its_whole_text_or_its_one_code_block(answer: str, value: Any) -> None:
    assert read_answer(answer) == value


@pytest.mark.parametrize(("answer", "reason"), [
    (None, "the answer was empty"),
    ("   ", "the answer was empty"),
    ("All pods are fine.", "the answer is not valid JSON (Expecting value at line 1 column 1)"),
    ("```json\n{oops}\n```", "the code block in the answer is not valid JSON"),
    ("```\n{}\n```\nor\n```\n[]\n```", "the answer holds 2 code blocks; give one JSON value"),
])
def test_what_is_not_an_answer_says_why(answer: str | None, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        read_answer(answer)


def test_a_mismatch_goes_back_with_what_is_wrong_and_the_value_comes_out(workdir: Path) -> None:
    bot, model = agent(text("All fine."), text('{"status": "okay"}'), text('```json\n{"status": "ok", "pods": 3}\n```'),
                       answer_schema=STATUS)
    outcome = bot.run("check the pods")
    assert outcome.status == "answered" and outcome.structured
    assert outcome.answer == {"status": "ok", "pods": 3}
    assert outcome.steps == 3
    sent_back = [m["content"] for m in model.requests[2]["messages"] if m["role"] == "user"][1:]
    assert sent_back[0].startswith("- the answer is not valid JSON (Expecting value at line 1 column 1)")
    assert sent_back[0].endswith(json.dumps(STATUS, separators=(",", ":")))  # the schema again, for a resumed session
    assert sent_back[1].startswith("- the answer does not match the schema: $.status: \"okay\" is not one of: "
                                   "\"ok\", \"failed\"")


def test_no_matching_answer_after_the_retries_is_invalid_answer(workdir: Path) -> None:
    write(workdir / "agent.yaml", "limits: {schema_retries: 1}\n")
    bot, model = agent(text("no"), text("{}"), text('{"status": "ok"}'), config=str(workdir / "agent.yaml"),
                       trust=True, answer_schema=STATUS)
    outcome = bot.run("check")
    assert outcome.status == "invalid_answer" and len(model.requests) == 2  # one retry, then no more
    assert outcome.final_text == "{}" and outcome.answer is None
    assert outcome.error == ("no answer matching the answer schema after 1 retry:\n"
                             "- the answer does not match the schema: $: missing required 'status'")


def test_the_final_event_carries_the_value_and_each_run_gets_its_retries(workdir: Path) -> None:
    bot, _ = agent(text("x"), text('{"status": "failed"}'), text("y"), text("z"), text('{"status": "ok"}'),
                   answer_schema=STATUS)
    finals = [e for e in bot.stream("first") if e.type == "final"]
    assert finals[0].to_json()["answer"] == {"status": "failed"}
    second = bot.run("second")  # two wrong answers again: the first run's retry does not count here
    assert second.status == "answered" and second.answer == {"status": "ok"}


def test_tools_are_called_on_the_way_to_the_answer(workdir: Path) -> None:
    write(workdir / "notes.txt", "3 pods\n")
    bot, model = agent(tool_calls(call("read_file", {"path": "notes.txt"})), text('{"status": "ok", "pods": 3}'),
                       answer_schema=STATUS, cwd=workdir)
    outcome = bot.run("how many pods?")
    assert outcome.answer == {"status": "ok", "pods": 3}
    assert "3 pods" in model.requests[1]["messages"][-1]["content"]


def test_without_a_schema_nothing_changes(workdir: Path) -> None:
    bot, model = agent(text("All fine."))
    outcome = bot.run("check")
    assert outcome.status == "answered" and not outcome.structured and outcome.answer is None
    assert "JSON Schema" not in model.requests[0]["messages"][0]["content"]


def test_agent_yaml_answer_schema_from_a_file_and_false_turning_it_off(workdir: Path) -> None:
    write(workdir / "schemas" / "status.yaml", "type: object\nrequired: [status]\n")
    write(workdir / "agent.yaml", "answer_schema: schemas/status.yaml\n")
    bot, model = agent(text('{"status": 1}'), config=str(workdir / "agent.yaml"), trust=True)
    assert bot.run("go").answer == {"status": 1}
    assert '{"type":"object","required":["status"]}' in model.requests[0]["messages"][0]["content"]
    chat, chat_model = agent(text("hello"), config=str(workdir / "agent.yaml"), trust=True, answer_schema=False)
    assert chat.run("hi").status == "answered" and chat.answers is None  # nami chat: a person reads it


@pytest.mark.parametrize(("given", "error", "message"), [
    ({"type": "objekt"}, ConfigError, "answer_schema: $.type: not a valid JSON Schema"),
    ('{"type": ', ConfigError, "answer_schema: not valid JSON"),
    ("missing.json", ConfigError, "cannot read the schema file"),
    ({"$ref": "https://example.com/s.json"}, ConfigError, "points outside this schema"),
])
def test_a_schema_that_cannot_be_used_is_refused_before_any_request(workdir: Path, given: Any, error: type,
                                                                  message: str) -> None:
    model = ScriptedModel([])
    with pytest.raises(error, match=message.replace("$", r"\$").replace("(", r"\(")):
        Agent.from_config(client=model, discover=False, answer_schema=given, cwd=workdir)
    assert model.requests == []


def test_a_schema_file_with_problems_names_them_in_the_file(workdir: Path) -> None:
    write(workdir / "s.json", '{\n  "type": "object",\n  "required": "status"\n}\n')
    with pytest.raises(SpecError) as caught:
        Agent.from_config(client=ScriptedModel([]), discover=False, answer_schema="s.json", cwd=workdir)
    assert str(caught.value.problems[0]).startswith(f"{workdir / 's.json'}:3:15: $.required: not a valid JSON Schema")


@pytest.mark.parametrize(("provider", "sent", "told"), [
    ("openai", {"type": "json_schema", "json_schema": {"name": "answer", "schema": STATUS, "strict": False}}, False),
    ("deepseek", {"type": "json_object"}, True),
    ("ollama", None, True),
    ("vllm", None, True),
    ("llamacpp", None, True),
    ("custom", None, True),
])
def test_each_preset_is_told_the_schema_its_way(workdir: Path, provider: str, sent: Any, told: bool) -> None:
    write(workdir / "agent.yaml", f"model: {{provider: {provider}, name: m, base_url: http://127.0.0.1:9/v1}}\n")
    settings = load_settings(ProjectRequest(str(workdir / "agent.yaml")))
    answers = structured_answers(STATUS, settings)
    assert answers is not None
    model = build_model(settings, answers)
    assert model.options.get("response_format") == sent  # type: ignore[attr-defined]
    assert (answers.instructions() is not None) == told


def test_an_answer_that_is_not_an_object_is_asked_for_by_instructions(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: openai, base_url: http://127.0.0.1:9/v1}\n")
    settings = load_settings(ProjectRequest(str(workdir / "agent.yaml")))
    answers = structured_answers({"type": "array", "items": {"type": "string"}}, settings)
    assert answers is not None and answers.request_options() == {}  # JSON modes produce objects
    assert json.dumps({"type": "array", "items": {"type": "string"}}, separators=(",", ":")) in (answers.instructions() or "")


def test_a_response_format_of_ones_own_is_kept(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: openai, base_url: http://127.0.0.1:9/v1,\n"
                                  "        options: {response_format: {type: json_object}}}\n")
    settings = load_settings(ProjectRequest(str(workdir / "agent.yaml")))
    model = build_model(settings, structured_answers(STATUS, settings))
    assert model.options["response_format"] == {"type": "json_object"}  # type: ignore[attr-defined]


def test_an_answer_schemas_pattern_cannot_hold_the_run(workdir: Path) -> None:
    """Sixth review (issue 40, item 8): ^(a|a)+$ against a long answer backtracked for as long as it took."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a|a)+$"}}}
    bot, model = agent(text(json.dumps({"id": "a" * 40 + "b"})), text('{"id": "aaa"}'), answer_schema=schema)
    outcome = bot.run("give the id")
    assert outcome.status == "answered" and outcome.answer == {"id": "aaa"}
    sent_back = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "user"][-1]
    assert sent_back.startswith("- the answer could not be checked: ") and "in time" in sent_back
