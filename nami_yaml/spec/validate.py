"""The published JSON Schemas and the translation of jsonschema errors into positioned problems."""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from nami_yaml.errors import Problem
from nami_yaml.spec.yamlpos import Document, JsonPath

SCHEMA_NAMES = ("tool", "agent", "tasks", "hook-input", "hook-output")

# The published schemas' patterns in words: a regex is no help to someone who typed `mytools.helpers`.
PATTERN_MEANINGS = {
    "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$": "a name of 1 to 64 letters, digits, _ . @ or -, starting with a letter or digit",
    "^[0-9]+(\\.[0-9]+)?(s|m|h)$": "a duration such as 90s, 15m or 2h (or a number of seconds)",
    "^[0-9a-f]{64}$": "64 lower-case hex digits (a SHA-256)",
    "^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\\.com|sk-ecdsa-sha2-nistp256@openssh"
    "\\.com) [A-Za-z0-9+/]+={0,3}( [^\\n]*)?$": "an SSH public key's line, as in ~/.ssh/id_ed25519.pub "
    "(ssh-ed25519 AAAA… comment)",
    "^[a-zA-Z0-9_-]{1,64}$": "1 to 64 letters, digits, _ or -",
    "^[A-Za-z0-9_-]{1,40}$": "1 to 40 letters, digits, _ or - (an MCP server's name)",
    "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$":
        "module:function, e.g. mytools.helpers:run",
    "^[A-Za-z_][A-Za-z0-9_]*$": "a variable name (letters, digits and _, not starting with a digit)",
    "^https?://": "a URL starting with http:// or https://",
    "^[a-z0-9_-]+(/[a-z0-9_-]+)?$": "a library group such as git, or group/file such as kubectl/logs",
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$": "1 to 128 letters, digits, ., _ or -, starting with a letter or digit",
    "^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$": "1 to 40 letters, digits, ., _ or -, starting with a letter or digit",
    "^[a-z][a-z0-9_]{0,39}$": "1 to 40 lower-case letters, digits or _, starting with a letter",
    "^[a-zA-Z0-9_][a-zA-Z0-9_./-]{0,63}$": "a group name of 1 to 64 letters, digits, _ . / or -, not starting "
                                           "with . / or -",
}

_TYPE_NAMES = {
    bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
    type(None): "null",
}


@cache
def schema_text(name: str) -> str:
    if name not in SCHEMA_NAMES:
        raise KeyError(name)
    return resources.files("nami_yaml.spec").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads(schema_text(name))


@cache
def validator(name: str, definition: str | None = None) -> Draft202012Validator:
    """A compiled validator for a published schema, or for one of its ``$defs``; compiled once."""
    root = schema(name)
    target = root if definition is None else {"$ref": f"#/$defs/{definition}", "$defs": root["$defs"]}
    return Draft202012Validator(target)


def describe_type(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def error_message(error: jsonschema.ValidationError) -> str:
    """A message for humans and models: what was expected and what was found."""
    kind = error.validator
    value = error.instance
    if kind == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        found = "null" if value is None else f"{describe_type(value)} {short(value)}"
        return f"expected {expected_text}, got {found}"
    if kind == "required":
        missing = [name for name in error.validator_value if isinstance(value, dict) and name not in value]
        return "missing required " + ", ".join(f"'{name}'" for name in missing)
    if kind == "enum":
        allowed = ", ".join(short(v) for v in error.validator_value)
        choices = [v for v in error.validator_value if isinstance(v, str)]
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        return f"{short(value)} is not one of: {allowed}{hint}"
    if kind == "not" and isinstance(error.validator_value, dict) and "enum" in error.validator_value:
        return f"{short(value)} is reserved: nami sets it itself"
    if kind == "const":
        return f"must be {short(error.validator_value)}"
    if kind == "pattern":
        meaning = PATTERN_MEANINGS.get(error.validator_value)
        if meaning:
            return f"{short(value)} must be {meaning}"
        return f"{short(value)} does not match the pattern {error.validator_value}"
    if kind in ("minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum",
                "exclusiveMinimum", "exclusiveMaximum", "uniqueItems", "multipleOf", "format"):
        return error.message
    return error.message


def _extra_keys(error: jsonschema.ValidationError) -> list[str]:
    properties = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    patterns = error.schema.get("patternProperties", {}) if isinstance(error.schema, dict) else {}
    return [
        key for key in error.instance
        if key not in properties and not any(re.search(p, key) for p in patterns)
    ]


def _leaf_errors(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """For oneOf/anyOf failures, the most relevant sub-errors instead of a wall of alternatives."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        best = jsonschema.exceptions.best_match(error.context)
        return [best] if best is not None else [error]
    return [error]


def problems_for(doc: Document, value: Any, base: JsonPath, check: Draft202012Validator) -> list[Problem]:
    """Validate ``value`` (found at ``base`` in ``doc``) and return every problem, positioned."""
    problems: list[Problem] = []
    for top in sorted(check.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
        for error in _leaf_errors(top):
            path: JsonPath = (*base, *error.absolute_path)
            if error.validator == "additionalProperties" and isinstance(error.instance, dict):
                known = sorted(error.schema.get("properties", {}))
                for key in _extra_keys(error):
                    hint = did_you_mean(key, known) if known else ""
                    problems.append(doc.problem((*path, key), f"unknown key '{key}'{hint}", key=True))
                continue
            if error.validator in ("if", "then", "else"):
                continue
            problems.append(doc.problem(path, error_message(error)))
    return problems
