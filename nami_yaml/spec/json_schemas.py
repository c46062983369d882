"""JSON Schemas that people write for nami to check values against (an answer schema, a tool's
``output.schema``): a valid draft 2020-12 schema, references only inside itself, and validation that never
reads a file or the network. Also reading one from a file or inline JSON, with positioned problems."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.spec.validate import did_you_mean, error_message
from nami_yaml.spec.yamlpos import Document, JsonPath, format_path, parse_yaml, read_source

REF_KEYWORDS = ("$ref", "$dynamicRef")
# Keywords whose values are data, never schemas: a "$ref" key inside them is just a key.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Keywords whose values map names to schemas: the names are not keywords (a property may be called "enum").
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
MAX_SHOWN = 8  # mismatches listed for one value; the rest are counted


def _retrieve_nothing(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


# Resolves `$ref`s inside the schema (and to the drafts' own metaschemas, which ship with jsonschema) but
# retrieves nothing: jsonschema's default would GET an http(s) URL, or read a file: URL, while validating,
# from a schema an untrusted repository wrote.
OFFLINE_SCHEMAS: Registry[Any] = Registry(retrieve=_retrieve_nothing)


@cache
def meta_validator() -> Draft202012Validator:
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


def non_local_refs(schema: Any, path: JsonPath = ()) -> list[tuple[JsonPath, str]]:
    """Every ``$ref``/``$dynamicRef`` in ``schema`` that does not start with ``#``, with its path."""
    found: list[tuple[JsonPath, str]] = []
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            found.extend(non_local_refs(item, (*path, index)))
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key in REF_KEYWORDS:
                if isinstance(value, str) and not value.startswith("#"):  # a non-string fails the metaschema
                    found.append(((*path, key), str(value)))
            elif key in _NAMED_SCHEMAS and isinstance(value, dict):
                for name, sub in value.items():
                    found.extend(non_local_refs(sub, (*path, key, name)))
            elif key not in _DATA_KEYWORDS:
                found.extend(non_local_refs(value, (*path, key)))
    return found


def local_refs_problem(ref_key: str, ref: str, checked: str = "values") -> str:
    return (f"{ref_key} {ref!r} points outside this schema; only local references (#/...) are allowed, so "
            f"validating {checked} never reads a file or the network")


def schema_problems(schema: Any) -> list[tuple[JsonPath, str]]:
    """Why ``schema`` cannot be used to validate values: (path inside it, message) for each problem."""
    if not isinstance(schema, dict):
        return [((), f"a JSON Schema is an object, got {type(schema).__name__}")]
    problems: list[tuple[JsonPath, str]] = []
    for error in meta_validator().iter_errors(schema):
        # `type: strin` fails an anyOf; its enum branch says what was meant, the wrapper does not.
        leaf = best_match(error.context) if error.context else error
        hint = ""
        if leaf.validator == "enum" and isinstance(leaf.instance, str):
            hint = did_you_mean(leaf.instance, [str(v) for v in leaf.validator_value])
        problems.append((tuple(error.absolute_path), f"not a valid JSON Schema: {leaf.message}{hint}"))
    problems += [(where, local_refs_problem(str(where[-1]), ref)) for where, ref in non_local_refs(schema)]
    return problems


def checker(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator for a schema ``schema_problems`` found nothing wrong with; offline."""
    return Draft202012Validator(schema, registry=OFFLINE_SCHEMAS)


def mismatches(check: Draft202012Validator, value: Any, limit: int = MAX_SHOWN) -> list[str]:
    """Where ``value`` departs from the schema, one ``$.path: message`` line each (at most ``limit``, then
    a count of the rest); empty when it fits."""
    try:
        errors = sorted(check.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    except Unresolvable as exc:
        return [f"$: the schema has a $ref that cannot be resolved ({exc})"]
    lines = [f"{format_path(tuple(e.absolute_path))}: {error_message(e)}" for e in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"… and {len(errors) - limit} more")
    return lines


def read_schema(spec: Any, *, base: Path, what: str) -> dict[str, Any]:
    """A JSON Schema given as a mapping, as inline JSON (text starting with ``{``) or as the path of a JSON
    or YAML file (relative to ``base``). Raises ConfigError (``what`` names the setting) or SpecError with
    every problem, positioned in the file it is in."""
    if isinstance(spec, dict):
        return _checked(spec, what)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"{what}: give a JSON Schema (an object), inline JSON or the path of a schema file")
    text = spec.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{what}: not valid JSON ({exc.msg} at column {exc.colno}); give a JSON object "
                              "or the path of a schema file") from None
        return _checked(value, what)
    return read_schema_file(base / Path(text).expanduser(), what=what)


def read_schema_file(path: Path, *, what: str) -> dict[str, Any]:
    """A schema file (JSON, or YAML: JSON is YAML), its problems positioned as ``file:line:col``."""
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{what}: cannot read the schema file {path}: {reason}") from None
    doc, problems = parse_yaml(text, str(path))
    if doc is None or problems:
        raise SpecError(problems)
    found = [doc.problem(where, message) for where, message in schema_problems(doc.value)]
    if found:
        raise SpecError(found)
    return doc.value  # type: ignore[no-any-return]


def positioned_problems(doc: Document, at: JsonPath, schema: Any) -> list[Problem]:
    """``schema_problems`` of a schema written inside a YAML file, at ``at``."""
    return [doc.problem((*at, *where), message) for where, message in schema_problems(schema)]


def _checked(schema: Any, what: str) -> dict[str, Any]:
    found = schema_problems(schema)
    if found:
        listing = "; ".join(f"{format_path(where)}: {message}" for where, message in found[:MAX_SHOWN])
        raise ConfigError(f"{what}: {listing}")
    return schema  # type: ignore[no-any-return]
