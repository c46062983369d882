"""Checks of a tool's ``parameters`` schema: a valid JSON Schema of an object, whose own values fit it.

A ``default: "no"`` on a boolean, or a ``default: up`` outside its enum, would otherwise only fail when the
tool runs (and then render ``--all no``); a ``pattern`` that is not a regular expression would fail every call.
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema.exceptions import best_match

from nami_yaml.registry.defaults import NOT_APPLIED, first_error, has_default, value_message
from nami_yaml.registry.draft import ToolDraft
from nami_yaml.registry.patterns import argument_validator
from nami_yaml.registry.schema_walk import subschemas
from nami_yaml.spec.fastcheck import parameters_surely_valid
from nami_yaml.spec.json_schemas import local_refs_problem, meta_validator, non_local_refs
from nami_yaml.spec.validate import did_you_mean, short
from nami_yaml.spec.yamlpos import JsonPath


def check_parameters_schema(draft: ToolDraft) -> None:
    """A valid draft 2020-12 schema, of ``type: object``, whose ``required`` names are declared."""
    parameters = draft.raw.get(draft.parameters_key)
    if parameters is None or not isinstance(parameters, dict):
        return  # absent: no arguments; not a mapping: the tool schema says so
    key = draft.parameters_key
    surely = draft.of_nami or parameters_surely_valid(parameters)
    meta_errors = [] if surely else meta_validator().iter_errors(parameters)
    for error in meta_errors:
        # `type: strin` fails an anyOf; its enum branch says what was meant, the wrapper does not.
        leaf = best_match(error.context) if error.context else error
        hint = ""
        if leaf.validator == "enum" and isinstance(leaf.instance, str):
            hint = did_you_mean(leaf.instance, [str(v) for v in leaf.validator_value])
        draft.error((key, *error.absolute_path), f"not a valid JSON Schema: {leaf.message}{hint}")
    if parameters.get("type") != "object":
        draft.error((key,), "parameters must be a schema of `type: object` (the arguments are one object)")
    required = parameters.get("required")
    if isinstance(required, list) and isinstance(parameters.get("properties", {}), dict):
        for name in required:
            if isinstance(name, str) and name not in draft.properties:
                draft.error((key, "required"), f"required parameter '{name}' is not declared in properties")


def check_patterns(draft: ToolDraft) -> None:
    """Every ``pattern`` compiles; otherwise every call with that parameter would fail."""
    for path, node in subschemas(draft.raw.get(draft.parameters_key), (draft.parameters_key,)):
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                draft.error((*path, "pattern"), f"pattern {short(pattern)} is not a valid regular expression: {exc}")


def check_own_values(draft: ToolDraft) -> None:
    """``default``, ``examples``, ``const`` and ``enum`` values are valid for the schema they sit in.

    ``default: null`` is no default. A default its schema refuses is never applied: an error where nami
    renders it (command, script), a warning where it is documentation (an entry point)."""
    parameters = draft.raw.get(draft.parameters_key)
    if not isinstance(parameters, dict) or not any(_has_values(node) for _, node in subschemas(parameters, ())):
        return
    root = argument_validator(parameters)
    documentation = draft.runner_kind == "entrypoint"
    for path, node in subschemas(parameters, (draft.parameters_key,)):
        if not _has_values(node):
            continue
        if has_default(node):
            _check_value(draft, root, node, (*path, "default"), node["default"], "default", warn=documentation)
        examples = node.get("examples")
        if isinstance(examples, list):
            for index, example in enumerate(examples):
                _check_value(draft, root, node, (*path, "examples", index), example, "example")
        if "const" in node:
            rest = {k: v for k, v in node.items() if k != "const"}
            _check_value(draft, root, rest, (*path, "const"), node["const"], "const")
        enum = node.get("enum")
        if isinstance(enum, list):
            rest = {k: v for k, v in node.items() if k != "enum"}
            for index, value in enumerate(enum):
                _check_value(draft, root, rest, (*path, "enum", index), value, "enum value")


def _has_values(node: dict[str, Any]) -> bool:
    return any(key in node for key in ("default", "examples", "const", "enum"))


def _check_value(draft: ToolDraft, root: Any, node: dict[str, Any], path: JsonPath, value: Any, what: str,
                 *, warn: bool = False) -> None:
    try:
        error = first_error(root, node, value)
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot use is reported by check_parameters_schema
        return
    if error is None:
        return
    message = value_message(what, value, error)
    if warn:
        draft.warn(path, f"{message}; {NOT_APPLIED}")
    else:
        draft.error(path, message)


def check_local_refs(draft: ToolDraft) -> None:
    """Only ``#/...`` references: a URL or file reference would make validating a model's arguments read
    a file or the network (jsonschema retrieves them), from a schema an untrusted repository wrote."""
    for where, ref in non_local_refs(draft.parameters, (draft.parameters_key,)):
        draft.error(where, local_refs_problem(str(where[-1]), ref, "arguments"))

