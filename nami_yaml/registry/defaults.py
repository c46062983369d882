"""Which ``default`` values nami fills in, one rule for the loader, MCP tools and the executor.

``default: null`` means "no default": it is how many real APIs mark an optional parameter, whatever its
type, so nothing is filled in and nothing is checked. Any other default is filled in when a call leaves its
parameter out, if its own schema accepts it. One the schema refuses (``"false"`` on a boolean, ``"N/A"``
outside its enum) is never filled in: for command and script tools, where nami would render it into an
argv, the environment or stdin, the loader refuses the tool; for entry points and MCP tools it is the
author's documentation, and a warning.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from jsonschema import ValidationError
from jsonschema.exceptions import best_match

from nami_yaml.registry.patterns import argument_validator, pattern_budget
from nami_yaml.registry.schema_walk import subschemas
from nami_yaml.spec.validate import error_message, short
from nami_yaml.spec.yamlpos import JsonPath

NOT_APPLIED = "nami does not apply it, so a call that leaves it out passes no value"


def has_default(node: Any) -> bool:
    """Whether a schema declares a default: ``default: null`` does not."""
    return isinstance(node, dict) and node.get("default") is not None


def first_error(root: Any, node: dict[str, Any], value: Any) -> ValidationError | None:
    """Why ``node`` (a schema inside the one ``root`` validates, so its ``$ref``s resolve) refuses ``value``,
    or None. Raises when the schema cannot be used (an unresolvable ``$ref``, a pattern out of time)."""
    if _surely_valid(node, value):
        return None
    with pattern_budget():
        errors = list(root.evolve(schema=node).iter_errors(value))
    return (best_match(errors) or errors[0]) if errors else None


_SIMPLE_KEYS = frozenset({"type", "description", "title", "default", "examples", "minimum", "maximum"})
_SIMPLE_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                               "boolean": (bool,)}


def _surely_valid(node: dict[str, Any], value: Any) -> bool:
    """Whether a schema of one simple type and bounds (``{type: integer, minimum: 1, default: 20}``: most
    tools' parameters) surely takes ``value``, answered without building a validator (a thousand tool files'
    defaults cost a tenth of a second that way). Only trusted for a "yes": anything else goes to jsonschema."""
    if not _SIMPLE_KEYS.issuperset(node):
        return False
    kinds = _SIMPLE_TYPES.get(node.get("type"))  # type: ignore[arg-type]
    if kinds is None or not isinstance(value, kinds) or (isinstance(value, bool) and kinds != (bool,)):
        return False
    for bound, inside in (("minimum", lambda b: value >= b), ("maximum", lambda b: value <= b)):
        limit = node.get(bound)
        if limit is None:
            continue
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (limit, value))
        if not numbers or not inside(limit):
            return False
    return True


def value_message(what: str, value: Any, error: ValidationError) -> str:
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return (f"{what} {short(value)} is not valid for this parameter: "
            f"{('$' + where + ': ') if where else ''}{error_message(error)}")


def refused_defaults(schema: dict[str, Any], root: Any = None) -> list[tuple[JsonPath, str]]:
    """Every default (null aside) its own schema refuses: its path in ``schema`` and why. A default that
    cannot be checked (its schema is broken) is left to the checks of the schema itself."""
    root = root if root is not None else argument_validator(schema)
    found = []
    for path, node in subschemas(schema, ()):
        if not has_default(node):
            continue
        try:
            error = first_error(root, node, node["default"])
        except Exception:  # noqa: BLE001 - a schema jsonschema cannot use is reported where it is checked
            continue
        if error is not None:
            found.append(((*path, "default"), value_message("default", node["default"], error)))
    return found


@dataclass(frozen=True)
class Defaults:
    """What nami fills into one object: ``values`` for its missing properties, ``nested`` for those that
    are objects with defaults of their own."""

    values: dict[str, Any] = field(default_factory=dict)
    nested: dict[str, Defaults] = field(default_factory=dict)

    def fill(self, value: Any) -> Any:
        """``value`` with the defaults filled in, recursively; the input and the defaults are not touched."""
        if not isinstance(value, dict) or not (self.values or self.nested):
            return value
        result = dict(value)
        for name, default in self.values.items():
            if name not in result:
                result[name] = copy.deepcopy(default)
        for name, inner in self.nested.items():
            if name in result:
                result[name] = inner.fill(result[name])
        return result


NONE = Defaults()


def applied_defaults(schema: dict[str, Any]) -> Defaults:
    """The defaults nami fills in for arguments of ``schema`` (through ``properties``, at any depth)."""
    try:
        root = argument_validator(schema)
    except Exception:  # noqa: BLE001 - not a schema jsonschema can use: nothing is filled in
        return NONE
    return _defaults_of(root, schema)


def _defaults_of(root: Any, schema: Any) -> Defaults:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return NONE
    values: dict[str, Any] = {}
    nested: dict[str, Defaults] = {}
    for name, sub in properties.items():
        if not isinstance(sub, dict):
            continue
        if has_default(sub):
            try:
                refused = first_error(root, sub, sub["default"]) is not None
            except Exception:  # noqa: BLE001 - a default that cannot be checked is not filled in
                refused = True
            if not refused:
                values[name] = sub["default"]
        inner = _defaults_of(root, sub)
        if inner is not NONE:
            nested[name] = inner
    return Defaults(values, nested) if values or nested else NONE


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with the defaults nami applies for ``schema`` filled in (see :func:`applied_defaults`)."""
    return applied_defaults(schema).fill(value)

