"""Unknown JSON Schema keywords in a tool's parameters are warnings: jsonschema ignores them, so a typo
(`descriptoin`, `minimun`) or a YAML value cut at an unquoted comma would otherwise pass unseen."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.registry.loader import check_tools

TOOL = "name: t\ndescription: d\nentrypoint: m:f\nparameters:\n"


def warnings(folder: Path, parameters: str) -> list[str]:
    path = folder / "t.yaml"
    path.write_text(TOOL + parameters, encoding="utf-8")
    tools, problems = check_tools([path])
    assert len(tools) == 1, problems  # a warning never stops a tool from loading
    return [f"{p.file}:{p.line}:{p.col}: {p.path}: {p.severity}: {p.message}" for p in problems]


def test_a_misspelt_keyword_is_a_warning_with_a_hint(workdir: Path) -> None:
    assert warnings(workdir, """\
  type: object
  properties:
    count: {type: integer, minimun: 1, descriptoin: How many.}
    tags:
      type: array
      items: {type: string, maxLenght: 20}
""") == [
        "t.yaml:7:28: $.parameters.properties.count.minimun: warning: unknown JSON Schema keyword 'minimun', "
        "which validation ignores; did you mean 'minimum'?",
        "t.yaml:7:40: $.parameters.properties.count.descriptoin: warning: unknown JSON Schema keyword "
        "'descriptoin', which validation ignores; did you mean 'description'?",
        "t.yaml:10:29: $.parameters.properties.tags.items.maxLenght: warning: unknown JSON Schema keyword "
        "'maxLenght', which validation ignores; did you mean 'maxLength'?",
    ]


def test_a_value_cut_at_an_unquoted_comma_is_named(workdir: Path) -> None:
    """`nami init`'s own example tool had this: the description ended at its comma."""
    assert warnings(workdir, """\
  type: object
  properties:
    paths: {type: array, items: {type: string}, description: Files, relative to the workspace.}
""") == [
        "t.yaml:7:69: $.parameters.properties.paths['relative to the workspace.']: warning: unknown JSON Schema "
        "keyword 'relative to the workspace.', which validation ignores; in a {flow: mapping} an unquoted comma "
        "ends the value: quote it (description: \"Files, relative to the workspace.\")",
    ]


def test_every_keyword_of_draft_2020_12_and_vendor_keywords_pass(workdir: Path) -> None:
    assert warnings(workdir, """\
  $schema: https://json-schema.org/draft/2020-12/schema
  $id: "urn:example:t"
  $comment: every keyword nami's validator knows, and a few vendors'
  title: T
  type: object
  x-generated-by: an OpenAPI exporter
  $defs:
    level: {$anchor: level, type: string, enum: [info, warn], deprecated: true}
    word: {$dynamicAnchor: meta, type: string}
  definitions:
    old: {type: integer}
  properties:
    level: {$ref: "#/$defs/level", readOnly: false, writeOnly: false, examples: [info]}
    since: {type: string, format: date-time, default: "2024-01-01T00:00:00Z"}
    data: {type: string, contentEncoding: base64, contentMediaType: application/json,
           contentSchema: {type: object}}
    tags: {type: array, prefixItems: [{type: string}], items: {type: string}, contains: {const: a},
           minContains: 1, maxContains: 3, uniqueItems: true, minItems: 1, maxItems: 9,
           unevaluatedItems: false}
    size: {type: number, minimum: 0, maximum: 9, exclusiveMinimum: -1, exclusiveMaximum: 10, multipleOf: 0.5}
    name: {type: string, minLength: 1, maxLength: 9, pattern: "^[a-z]+$"}
    labels:
      type: object
      propertyNames: {pattern: "^[a-z]+$"}
      patternProperties: {"^x": {type: string}}
      additionalProperties: {type: string}
      minProperties: 0
      maxProperties: 9
      dependentRequired: {a: [b]}
      dependentSchemas: {b: {required: [a]}}
      unevaluatedProperties: false
    mode:
      if: {const: a}
      then: {const: a}
      else: {not: {const: b}}
      anyOf: [{type: string}]
      oneOf: [{type: string}]
      allOf: [{type: string}, {$dynamicRef: "#meta"}]
      x-order: 3
""") == []


def test_a_property_named_like_anything_is_a_name_not_a_keyword(workdir: Path) -> None:
    assert warnings(workdir, """\
  type: object
  properties:
    descriptoin: {type: string}
    "relative to the workspace.": {type: string}
  patternProperties:
    "^minimun": {type: string}
  $defs:
    maxLenght: {type: string}
  required: [descriptoin]
""") == []


@pytest.mark.parametrize(("keyword", "hint"), [
    ("dependencies: {a: [b]}", "it is not draft 2020-12, which nami validates with; use dependentRequired "
                               "or dependentSchemas"),
    ("additionalItems: false", "it is not draft 2020-12, which nami validates with; use items (after prefixItems)"),
    ("nullable: true", "it is OpenAPI's, not JSON Schema's; write type: [string, \"null\"] instead"),
])
def test_keywords_of_other_dialects_say_what_to_write(workdir: Path, keyword: str, hint: str) -> None:
    (found,) = warnings(workdir, f"  type: object\n  properties:\n    a: {{type: string, {keyword}}}\n")
    name = keyword.split(":")[0]
    assert found.endswith(f"warning: unknown JSON Schema keyword '{name}', which validation ignores; {hint}")
