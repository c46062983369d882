"""Argument validation whose regular expressions cannot hold nami.

A tool's schema may hold a pattern such as ``^([a-z]+)+$``, which backtracks for practically ever on a
long value that almost matches. Python's ``re`` cannot be interrupted (not even by Ctrl-C, as it holds the
GIL), so every keyword that matches a pattern (``pattern``, ``patternProperties``, and through them
``additionalProperties`` and ``unevaluatedProperties``) uses the ``regex`` module here, whose matches take a
timeout, under one time budget per call. Past the budget the call is refused with a message for the model.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry as SchemaRegistry
from referencing.exceptions import NoSuchResource

from nami_yaml.display import plural

PATTERN_BUDGET = 1.0  # seconds of pattern matching for all the arguments of one call

_deadline: ContextVar[float | None] = ContextVar("nami_pattern_deadline", default=None)


class PatternTimeout(Exception):
    """A pattern did not finish matching within the call's budget."""

    def __init__(self, pattern: str, text: str):
        super().__init__(pattern, text)
        self.pattern = pattern
        self.text = text

    def __str__(self) -> str:
        shown = self.text if len(self.text) <= 40 else self.text[:40] + "…"
        return (f"{shown!r} ({plural(len(self.text), 'character')}) could not be checked against the pattern "
                f"{self.pattern!r} in time ({PATTERN_BUDGET:g} s): send a shorter or simpler value")


class BadPattern(ValueError):
    """The tool's own pattern does not compile: the tool is at fault, not the model."""


@contextlib.contextmanager
def pattern_budget(seconds: float = PATTERN_BUDGET) -> Iterator[None]:
    """Every match inside the block shares one deadline."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    try:
        return regex.compile(pattern)
    except (regex.error, TypeError, ValueError) as exc:
        raise BadPattern(f"the tool's pattern {pattern!r} is not a valid regular expression: {exc}") from None


def _search(pattern: str, text: str) -> bool:
    deadline = _deadline.get()
    left = PATTERN_BUDGET if deadline is None else deadline - time.monotonic()
    if left <= 0:
        raise PatternTimeout(pattern, text)
    try:
        return _compiled(pattern).search(text, timeout=left) is not None
    except TimeoutError:
        raise PatternTimeout(pattern, text) from None


def end_anchored(pattern: str) -> str:
    """``$`` as JSON Schema (ECMA-262) means it: the end of the text, not also before a final newline."""
    out, in_class, escaped = [], False, False
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[" and not in_class:
            in_class = True
            class_start = index + 1
        elif char == "]" and in_class:
            # "[]" and "[^]" open a class whose first member is a literal "]".
            opened = pattern[class_start:index]
            in_class = opened in ("", "^")
        elif char == "$" and not in_class:
            out.append("\\Z")
            continue
        out.append(char)
    return "".join(out)


def matches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, with ``$`` meaning the very end.

    Raises PatternTimeout past the budget, BadPattern for a pattern that does not compile.
    """
    return _search(pattern, text) and (not text.endswith("\n") or _search(end_anchored(pattern), text))


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = matches(pattern, instance)
    except BadPattern as exc:
        yield ValidationError(str(exc), validator="schemaPattern")
        return
    if not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _matches_any(patterns: Any, key: str) -> bool:
    return any(matches(pattern, key) for pattern in patterns)


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            try:
                matched = matches(pattern, key)
            except BadPattern as exc:
                yield ValidationError(str(exc), validator="schemaPattern")
                return
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def additional_keys(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys neither ``properties`` nor ``patternProperties`` of ``schema`` cover."""
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [key for key in instance if key not in properties and not _matches_any(patterns, key)]


def _additional_properties(validator: Any, allowed: Any, instance: Any,
                           schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    try:
        extras = additional_keys(instance, schema)
    except BadPattern as exc:
        yield ValidationError(str(exc), validator="schemaPattern")
        return
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        listed = ", ".join(repr(each) for each in sorted(extras))
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys some keyword of ``schema`` (or of a subschema that applies) evaluated, as draft 2020-12
    defines it for ``unevaluatedProperties``."""
    if not isinstance(schema, dict):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        if keyword in schema:
            resolved = validator._resolver.lookup(schema[keyword])
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(inner, instance, resolved.contents)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if keyword in schema:
            keys |= {key for key, value in instance.items() if _valid(validator.descend(value, schema[keyword]))}
    patterns = schema.get("patternProperties", {})
    keys |= {key for key in instance if _matches_any(patterns, key)}
    for name, subschema in (schema.get("dependentSchemas") or {}).items():
        if name in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            keys |= _evaluated_keys(validator, instance, schema.get("then"))
        else:
            keys |= _evaluated_keys(validator, instance, schema.get("else"))
    return keys


def _unevaluated_properties(validator: Any, unevaluated: Any, instance: Any,
                            schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    try:
        evaluated = _evaluated_keys(validator, instance, schema)
    except BadPattern as exc:
        yield ValidationError(str(exc), validator="schemaPattern")
        return
    bad = [key for key in instance if key not in evaluated
           and not _valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))]
    if bad:
        listed = ", ".join(repr(each) for each in sorted(bad))
        yield ValidationError(f"Unevaluated properties are not allowed ({listed} unexpected)")


# Draft 2020-12 with every pattern matched by `matches`: bounded in time, and `$` anchored the way JSON
# Schema means it, so `^[a-z]+$` refuses "nginx\n" (Python's `$` would accept the trailing newline).
ArgumentValidator = validators.extend(Draft202012Validator, {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
})


def _retrieve_nothing(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


# Resolves `$ref`s inside the schema (and to the drafts' own metaschemas, which ship with jsonschema) but
# retrieves nothing: jsonschema's default would GET an http(s) URL, or read a file: URL, while validating a
# model's arguments, from a schema an untrusted repository wrote.
OFFLINE_SCHEMAS: SchemaRegistry[Any] = SchemaRegistry(retrieve=_retrieve_nothing)


def argument_validator(schema: Any) -> Any:
    """The validator of a tool's arguments: bounded patterns, and no ``$ref`` read from a file or the network."""
    return ArgumentValidator(schema, registry=OFFLINE_SCHEMAS)
