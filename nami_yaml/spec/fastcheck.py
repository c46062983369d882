"""A fast "surely valid" test, so that loading a thousand tool files stays well under a second.

jsonschema gives the precise, positioned messages nami reports, but validating against the draft
2020-12 meta-schema costs milliseconds per tool. fastjsonschema compiles a schema to Python code and
answers in microseconds. It is only trusted for a "yes": anything it rejects, or any parameters schema
using keywords whose meaning differs between draft 7 and 2020-12, goes through jsonschema as before.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import fastjsonschema
from jsonschema import Draft7Validator

from nami_yaml.spec.validate import schema

# Keywords that mean the same in draft 7 and draft 2020-12 (annotations included).
_COMMON = frozenset({
    "type", "properties", "required", "enum", "const", "default", "description", "title", "examples",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "additionalProperties", "anyOf", "oneOf", "allOf", "not", "contains", "propertyNames", "readOnly",
    "writeOnly", "deprecated", "items", "patternProperties", "if", "then", "else", "$comment",
})
_SCHEMA_MAPS = ("properties", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SCHEMA_ONE = ("not", "contains", "propertyNames", "additionalProperties", "if", "then", "else", "items")


@cache
def _compiled_tool() -> Callable[[Any], Any]:
    root = schema("tool")
    # use_default=False: fastjsonschema otherwise writes schema defaults into the value it checks.
    return fastjsonschema.compile({"$ref": "#/$defs/tool", "$defs": root["$defs"]}, use_default=False)


@cache
def _compiled_meta() -> Callable[[Any], Any]:
    # Without use_default=False the meta-schema's defaults (readOnly: false, items: true, ...) would be
    # written into the tool's parameters, and so into the definition the model is sent.
    return fastjsonschema.compile(Draft7Validator.META_SCHEMA, use_default=False)


def _passes(check: Callable[[Any], Any], value: Any) -> bool:
    try:
        check(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def tool_surely_valid(value: Any) -> bool:
    return _passes(_compiled_tool(), value)


def _common_keywords_only(node: Any) -> bool:
    if isinstance(node, bool):
        return True
    if not isinstance(node, dict) or not _COMMON.issuperset(node):
        return False
    if isinstance(node.get("items"), list):  # tuple form: draft 7 only; 2020-12 says prefixItems
        return False
    for key in _SCHEMA_MAPS:
        if key in node and not all(_common_keywords_only(sub) for sub in node[key].values()):
            return False
    for key in _SCHEMA_LISTS:
        if key in node and not all(_common_keywords_only(sub) for sub in node[key]):
            return False
    return all(_common_keywords_only(node[key]) for key in _SCHEMA_ONE if key in node)


def parameters_surely_valid(parameters: Any) -> bool:
    return _passes(_compiled_meta(), parameters) and _common_keywords_only(parameters)
