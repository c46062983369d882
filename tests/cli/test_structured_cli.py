"""Structured results as a user runs them: `nami run --schema` and agent.yaml's answer_schema against the fake
OpenAI-compatible server (a real `nami` process, the real openai SDK), and a tool whose output is shaped
before the request the model gets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import nami, run_nami, write

SCHEMA = {"type": "object", "properties": {"status": {"enum": ["ok", "failed"]}, "pods": {"type": "integer"}},
          "required": ["status"], "additionalProperties": False}
INLINE = json.dumps(SCHEMA)


def system_prompt(request: Any) -> str:
    return str(request["messages"][0]["content"])


def test_a_non_json_answer_then_a_valid_one(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("All three pods are running."), text('{"status": "ok", "pods": 3}'))
    result = run_nami(fake_openai, "run", "--schema", INLINE, "are the pods fine?", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"status":"ok","pods":3}\n'  # exactly the value, one line for a pipe
    assert len(fake_openai.requests) == 2
    sent_back = fake_openai.requests[1]["messages"][-1]
    assert sent_back["role"] == "user" and "the answer is not valid JSON" in sent_back["content"]


def test_a_schema_never_met_exits_4_with_the_errors_and_the_last_answer(fake_openai: FakeOpenAIServer,
                                                                        workdir: Path) -> None:
    fake_openai.add(text('{"status": "fine"}'), text('{"status": "good"}'), text('{"status": "great", "x": 1}'))
    result = run_nami(fake_openai, "run", "--schema", INLINE, "are the pods fine?", cwd=workdir)
    assert result.returncode == 4, result.stderr
    assert result.stdout == ""
    assert len(fake_openai.requests) == 3  # the answer and limits.schema_retries (2) more
    assert "no answer matching the answer schema after 2 retries" in result.stderr
    assert "$.status: \"great\" is not one of: \"ok\", \"failed\"" in result.stderr
    assert "unknown key" in result.stderr or "Additional properties" in result.stderr
    assert 'the last answer was:\n{"status": "great", "x": 1}' in result.stderr
    assert "Traceback" not in result.stderr


def test_schema_from_a_file_json_or_yaml(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    write(workdir / "status.json", INLINE)
    write(workdir / "status.yaml", "type: array\nitems: {type: string}\n")
    fake_openai.add(text('```json\n{"status": "failed"}\n```'), text('["web-1", "web-2"]'))
    first = run_nami(fake_openai, "run", "--schema", "status.json", "check", cwd=workdir)
    second = run_nami(fake_openai, "run", "--schema", "status.yaml", "list them", cwd=workdir)
    assert (first.returncode, first.stdout) == (0, '{"status":"failed"}\n'), first.stderr
    assert (second.returncode, second.stdout) == (0, '["web-1","web-2"]\n'), second.stderr


def test_answer_schema_in_agent_yaml_and_the_json_final_event(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    write(workdir / "agent.yaml", "answer_schema:\n  type: object\n  required: [status]\n"
                                  "  properties: {status: {enum: [ok, failed]}}\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    fake_openai.add(text('{"status": "ok"}'))
    result = run_nami(fake_openai, "run", "--json", "check", cwd=workdir)
    assert result.returncode == 0, result.stderr
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["type"] == "final" and final["status"] == "answered" and final["answer"] == {"status": "ok"}
    assert '"required":["status"]' in system_prompt(fake_openai.requests[0])  # the default preset: instructions


def test_response_format_for_a_preset_that_takes_it_instructions_for_one_that_does_not(
        fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    openai_project, ollama_project = workdir / "openai", workdir / "ollama"
    # OpenAI's protocol at this URL, chosen in one file (as for a proxy of OpenAI's API): its quirks apply. (Only
    # $NAMI_BASE_URL moving `provider: openai` to a local server would leave them: docs/config.md, provider.)
    write(openai_project / "agent.yaml", f"model: {{provider: openai, base_url: '{fake_openai.base_url}'}}\n")
    write(ollama_project / "agent.yaml", "model: {provider: ollama}\n")
    for project in (openai_project, ollama_project):
        assert run_nami(None, "trust", "--yes", cwd=project).returncode == 0
    fake_openai.add(text('{"status": "ok"}'), text('{"status": "ok"}'))
    assert run_nami(None, "run", "--schema", INLINE, "check", cwd=openai_project).returncode == 0
    assert run_nami(fake_openai, "run", "--schema", INLINE, "check", cwd=ollama_project).returncode == 0
    to_openai, to_ollama = fake_openai.requests
    assert to_openai["response_format"] == {"type": "json_schema",
                                            "json_schema": {"name": "answer", "schema": SCHEMA, "strict": False}}
    assert "JSON Schema" not in system_prompt(to_openai)
    assert "response_format" not in to_ollama
    assert "matching this JSON Schema:\n" + json.dumps(SCHEMA, separators=(",", ":")) in system_prompt(to_ollama)


def test_a_bad_schema_is_a_usage_error_before_any_request(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    write(workdir / "bad.json", '{"type": "object",\n "properties": {"a": {"type": "strng"}}}\n')
    for schema, message in ((('{"type": "objekt"}'), "nami: --schema: $.type: not a valid JSON Schema"),
                            ('{"type": ', "nami: --schema: not valid JSON"),
                            ("missing.json", "nami: --schema: cannot read the schema file"),
                            ("bad.json", "bad.json:2:31: $.properties.a.type: not a valid JSON Schema")):
        result = run_nami(fake_openai, "run", "--schema", schema, "check", cwd=workdir)
        assert result.returncode == 2, (schema, result.stderr)
        assert message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert fake_openai.requests == []


def test_nami_check_reports_a_bad_answer_schema_where_it_is(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: []}\nanswer_schema:\n  type: object\n  required: status\n")
    result = nami("check")
    assert result.exit_code != 0
    assert "agent.yaml:4:13: $.answer_schema.required: not a valid JSON Schema" in result.output
    write(workdir / "agent.yaml", "answer_schema: schemas/none.json\n")
    result = nami("check")
    assert "agent.yaml:1:16: $.answer_schema: cannot read the schema file" in result.output


def test_a_shaped_result_leaves_the_unselected_fields_out_of_the_request(fake_openai: FakeOpenAIServer,
                                                                         workdir: Path) -> None:
    pods = {"items": [{"metadata": {"name": f"web-{n}", "uid": f"secret-uid-{n}"},
                       "status": {"phase": "Running", "podIP": f"10.1.0.{n}"}} for n in range(3)]}
    write(workdir / "pods.json", json.dumps(pods, indent=4))
    write(workdir / "tools" / "pods.yaml", "name: pods\ndescription: List pods.\nrisk: read\n"
                                           "command: [cat, pods.json]\noutput:\n  format: json\n"
                                           "  select: \"items[].{name: metadata.name, phase: status.phase}\"\n")
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools]}\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    fake_openai.add(tool_calls(call("pods", {})), text("3 pods run."))
    result = run_nami(fake_openai, "run", "list pods", cwd=workdir)
    assert result.returncode == 0, result.stderr
    seen = json.dumps(fake_openai.requests[1]["messages"][-1])
    assert "web-0" in seen and "Running" in seen
    assert "secret-uid" not in seen and "podIP" not in seen and "metadata" not in seen
    assert "full output: " in seen
