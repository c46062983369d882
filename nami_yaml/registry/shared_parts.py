"""The shared parts of a file of several tools: ``defaults:`` (any key a tool may set; a tool's own key
wins) and ``$defs:`` (parameter schemas a tool names with ``$ref: "#/$defs/NAME"``).

Each tool is completed here, before any check sees it, so every check, trust, ``nami tools list`` and the
library see one whole tool as if it had been written out. A problem found in a part that came from
``defaults:`` or ``$defs:`` is positioned where that part is written: the document's positions of the tool's
path are pointed at the shared part's.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from nami_yaml.errors import Problem
from nami_yaml.spec.yamlpos import Document, JsonPath

DEFAULTS_KEY = "defaults"
DEFS_KEY = "$defs"
REF_PREFIX = "#/$defs/"
_NOT_SHARED = frozenset({"name"})  # each tool's own


def check_shared(doc: Document, value: dict[str, Any], known: tuple[str, ...], problems: list[Problem]) -> None:
    """Report what is wrong with the file's ``defaults:`` and ``$defs:`` themselves."""
    defaults = value.get(DEFAULTS_KEY)
    if defaults is not None and not isinstance(defaults, dict):
        problems.append(doc.problem((DEFAULTS_KEY,), "`defaults:` must be a mapping of keys a tool may set"))
    for key in defaults if isinstance(defaults, dict) else ():
        if key in _NOT_SHARED:
            problems.append(doc.problem((DEFAULTS_KEY, key), f"`{key}` is each tool's own; it cannot be a default",
                                        key=True))
        elif key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(doc.problem((DEFAULTS_KEY, key), f"unknown key '{key}' in defaults{hint}", key=True))
    defs = value.get(DEFS_KEY)
    if defs is not None and not (isinstance(defs, dict) and all(isinstance(v, dict) for v in defs.values())):
        problems.append(doc.problem((DEFS_KEY,), "`$defs:` must map names to parameter schemas (mappings)"))


def completed(doc: Document, value: dict[str, Any], where: JsonPath, entry: dict[str, Any],
              known: tuple[str, ...], problems: list[Problem]) -> dict[str, Any]:
    """The tool at ``where`` with the file's defaults under its own keys and its ``$ref``s to ``$defs``
    written out."""
    defaults = value.get(DEFAULTS_KEY)
    tool = dict(entry)
    if isinstance(defaults, dict):
        for key, default in defaults.items():
            if key in known and key not in _NOT_SHARED and key not in tool:
                tool[key] = copy.deepcopy(default)
                _alias(doc, (DEFAULTS_KEY, key), (*where, key))
    defs = value.get(DEFS_KEY)
    parameters = tool.get("parameters")
    if isinstance(defs, dict) and isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict):
        base = (*where, "parameters", "properties")
        properties = {}
        for name, schema in parameters["properties"].items():
            properties[name] = _resolved(doc, defs, schema, (*base, name), problems)
        tool["parameters"] = {**parameters, "properties": properties}
    return tool


def _resolved(doc: Document, defs: dict[str, Any], schema: Any, path: JsonPath, problems: list[Problem]) -> Any:
    """A property's schema with ``$ref: "#/$defs/NAME"`` replaced by that schema (its own keys beside the
    ``$ref``, a description say, win)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
        return schema
    ref = schema["$ref"]
    if not ref.startswith(REF_PREFIX):
        return schema  # another kind of reference: the schema checks say what they make of it
    name = ref[len(REF_PREFIX):]
    shared = defs.get(name)
    if not isinstance(shared, dict):
        listed = ", ".join(defs) or "none"
        problems.append(doc.problem((*path, "$ref"), f"{ref} names no schema in the file's $defs (defined: {listed})"))
        return {key: value for key, value in schema.items() if key != "$ref"}
    own = {key: value for key, value in schema.items() if key != "$ref"}
    _alias(doc, (DEFS_KEY, name), path)
    return {**copy.deepcopy(shared), **own}


def _alias(doc: Document, source: JsonPath, target: JsonPath) -> None:
    """Positions under ``target`` (absent from the file) are those under ``source``."""
    for table in (doc.positions, doc.key_positions):
        for path, position in list(table.items()):
            if path[:len(source)] == source:
                table.setdefault((*target, *path[len(source):]), position)
