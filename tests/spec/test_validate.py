"""The published schemas and the messages their violations turn into."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from nami_yaml.spec.validate import (
    PATTERN_MEANINGS,
    SCHEMA_NAMES,
    did_you_mean,
    problems_for,
    schema,
    schema_text,
    short,
    validator,
)
from nami_yaml.spec.yamlpos import parse_yaml


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return found + [p for value in node.values() for p in _patterns(value)]
    if isinstance(node, list):
        return [p for value in node for p in _patterns(value)]
    return []


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_published_schemas_are_valid_draft_2020_12(name: str) -> None:
    document = json.loads(schema_text(name))
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema(name) == document


# The schemas of files people write (the hooks' input and output are nami's and the hook's: no patterns).
@pytest.mark.parametrize("name", [name for name in SCHEMA_NAMES if not name.startswith("hook-")])
def test_every_pattern_has_words_for_humans(name: str) -> None:
    patterns = _patterns(schema(name))
    assert patterns, "the schemas use patterns; this test would be vacuous without them"
    assert [p for p in patterns if p not in PATTERN_MEANINGS] == []


def test_unknown_schema_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        schema_text("nope")


def test_did_you_mean() -> None:
    assert did_you_mean("comand", ["command", "script", "entrypoint"]) == "; did you mean 'command'?"
    assert did_you_mean("zzz", ["command", "script"]) == ""


def test_short_cuts_long_values() -> None:
    assert short("abc") == '"abc"'
    assert len(short("x" * 100)) == 40 and short("x" * 100).endswith("…")


def _messages(text: str, name: str = "agent", definition: str | None = None) -> list[str]:
    doc, problems = parse_yaml(text, "f.yaml")
    assert doc is not None and problems == []
    return [str(p) for p in problems_for(doc, doc.value, (), validator(name, definition))]


def test_messages_say_what_was_expected_and_found() -> None:
    text = "model:\n  temperature: hot\n  retries: 99\n  provider: acme\nlimits: {max_steps: 0}\n"
    assert _messages(text) == [
        "f.yaml:5:21: $.limits.max_steps: 0 is less than the minimum of 1",
        "f.yaml:4:13: $.model.provider: \"acme\" is not one of: \"deepseek\", \"openai\", \"ollama\", \"vllm\", "
        "\"llamacpp\", \"custom\"",
        "f.yaml:3:12: $.model.retries: 99 is greater than the maximum of 10",
        "f.yaml:2:16: $.model.temperature: expected number, got string \"hot\"",
    ]


def test_unknown_keys_are_reported_at_the_key_with_a_suggestion() -> None:
    assert _messages("modle: {name: x}\nlimits: {max_step: 3}\n") == [
        "f.yaml:1:1: $.modle: unknown key 'modle'; did you mean 'model'?",
        "f.yaml:2:10: $.limits.max_step: unknown key 'max_step'; did you mean 'max_steps'?",
    ]


def test_one_of_failures_report_the_best_alternative_not_a_wall() -> None:
    messages = _messages("tools: {builtin: all}\n")
    assert len(messages) == 1
    assert messages[0].startswith("f.yaml:1:18: $.tools.builtin: ")


def test_pattern_failures_are_explained_in_words() -> None:
    assert _messages("model: {base_url: 'localhost:8080', api_key_env: MY-KEY}\n") == [
        "f.yaml:1:50: $.model.api_key_env: \"MY-KEY\" must be a variable name (letters, digits and _, "
        "not starting with a digit)",
        "f.yaml:1:19: $.model.base_url: \"localhost:8080\" must be a URL starting with http:// or https://",
    ]


def test_tool_definition_schema_via_defs() -> None:
    assert _messages("name: t\ndescription: ''\nscript: x\nrisk: read\n", "tool", "tool") == [
        "f.yaml:2:14: $.description: '' should be non-empty",
    ]


# Keywords that mean the same in draft 7 (what older editor plugins validate with) and draft 2020-12.
_DRAFT7_COMPATIBLE = {"$schema", "$id", "$ref", "$defs", "title", "description", "type", "properties", "required",
                      "additionalProperties", "items", "minItems", "uniqueItems", "enum", "const", "pattern",
                      "minLength", "minimum", "maximum", "exclusiveMinimum", "oneOf", "if", "then", "else",
                      "propertyNames", "not", "default", "examples", "anyOf", "minProperties", "maxProperties"}
_SCHEMA_MAPS = ("properties", "$defs")


def _keywords(node: Any) -> set[str]:
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for key, value in node.items():
        if key in _SCHEMA_MAPS:
            found |= {k for sub in value.values() for k in _keywords(sub)}
        elif key in ("oneOf", "anyOf", "allOf"):
            found |= {k for sub in value for k in _keywords(sub)}
        elif isinstance(value, dict) and key not in ("enum", "const", "default"):
            found |= _keywords(value)
    return found


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_ids_are_names_not_addresses_and_keywords_read_the_same_in_draft_7(name: str) -> None:
    document = schema(name)
    assert document["$id"] == f"urn:nami-yaml:schemas:{name}"  # no web address nobody serves
    assert _keywords(document) <= _DRAFT7_COMPATIBLE


@pytest.mark.parametrize(("name", "text"), [
    ("agent", "$schema: .nami/schemas/agent.schema.json\nmodel: {name: m}\n"),
    ("tool", "$schema: ../.nami/schemas/tool.schema.json\nname: t\ndescription: d\ncommand: [echo]\n"),
    ("tool", "$schema: ../.nami/schemas/tool.schema.json\ntools:\n  - {name: t, description: d, command: [echo]}\n"),
])
def test_a_top_level_schema_key_is_accepted(name: str, text: str) -> None:
    doc, problems = parse_yaml(text, "f.yaml")
    assert doc is not None and problems == []
    assert problems_for(doc, doc.value, (), validator(name)) == []
    bad, _ = parse_yaml(text.replace("$schema: ", "$schema: 5 #", 1), "f.yaml")
    assert bad is not None
    assert [p.message for p in problems_for(bad, bad.value, (), validator(name))] == ["expected string, got integer 5"]
