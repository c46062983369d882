"""Walking a JSON Schema: every schema object in it with its path, past the keywords whose values are data
(``enum``, ``default``) or name things (the keys of ``properties`` are parameter names, not keywords)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nami_yaml.spec.yamlpos import JsonPath

# Keywords whose values map names to schemas (draft 2020-12, and `definitions` of the drafts before it).
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keywords whose value is one schema.
SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
              "unevaluatedItems", "unevaluatedProperties", "contentSchema")
# Keywords whose value is a list of schemas.
SCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")


def subschemas(node: Any, path: JsonPath) -> Iterator[tuple[JsonPath, dict[str, Any]]]:
    """Every schema object in a schema, with its path, the schema itself first."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in SCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                yield from subschemas(child, (*path, key, name))
    for key in SCHEMA_ONE:
        if key in node:
            yield from subschemas(node[key], (*path, key))
    for key in SCHEMA_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield from subschemas(child, (*path, key, index))
