"""Unknown keywords in a tool's ``parameters``: a warning each. JSON Schema ignores a keyword it does not
know, so ``minimun: 1`` checks nothing and ``descriptoin`` tells the model nothing, silently; so does the
rest of a YAML value cut at an unquoted comma (``{description: Files, relative to the workspace.}`` holds
a key ``relative to the workspace.``). Vendor keywords (``x-…``) are the author's own.
"""

from __future__ import annotations

from typing import Any

from nami_yaml.registry.draft import ToolDraft
from nami_yaml.registry.schema_walk import subschemas
from nami_yaml.spec.validate import did_you_mean

# Draft 2020-12, every vocabulary (nami validates arguments with it), and `definitions`, which its
# meta-schema keeps for the drafts before (a `$ref` to #/definitions/... resolves the same).
KEYWORDS = frozenset({
    # core
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    # applicators
    "prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
    "unevaluatedItems", "unevaluatedProperties",
    # validation
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    # annotations: meta-data, format, content
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format",
    "contentEncoding", "contentMediaType", "contentSchema",
    "definitions",
})
_OLDER_DRAFTS = {
    "dependencies": "dependentRequired or dependentSchemas",
    "additionalItems": "items (after prefixItems)",
    "id": "$id",
    "$recursiveRef": "$dynamicRef",
    "$recursiveAnchor": "$dynamicAnchor",
}


def check_schema_keywords(draft: ToolDraft) -> None:
    for path, node in subschemas(draft.raw.get(draft.parameters_key), (draft.parameters_key,)):
        previous: tuple[str, Any] | None = None
        for key, value in node.items():
            if isinstance(key, str) and key not in KEYWORDS and not key.startswith("x-"):
                draft.warn((*path, key), f"unknown JSON Schema keyword '{key}', which validation ignores; "
                                         f"{_hint(key, value, node, previous)}", key=True)
            previous = (key, value)


def _hint(key: str, value: Any, node: dict[str, Any], previous: tuple[str, Any] | None) -> str:
    if key in _OLDER_DRAFTS:
        return f"it is not draft 2020-12, which nami validates with; use {_OLDER_DRAFTS[key]}"
    if key == "nullable":
        declared = node.get("type")
        types = declared if isinstance(declared, list) else [declared] if isinstance(declared, str) else ["string"]
        listed = ", ".join([*(t for t in types if t != "null"), '"null"'])
        return f"it is OpenAPI's, not JSON Schema's; write type: [{listed}] instead"
    hint = did_you_mean(key, sorted(KEYWORDS))
    if hint:
        return hint.removeprefix("; ")
    if value is None and previous is not None and isinstance(previous[1], str):
        return (f"in a {{flow: mapping}} an unquoted comma ends the value: quote it "
                f"({previous[0]}: \"{previous[1]}, {key}\")")
    return "vendor keywords start with x-"
