"""``$ref`` inside a parameters schema: every one must point at a schema of this schema, and no chain of them
may come back to where it started without reaching into the arguments.

``$defs: {a: {$ref: "#/$defs/a"}}`` is a valid JSON Schema, but validating anything against it recurses
until Python gives up (a RecursionError). A schema may recurse through keywords that go one level down
into the value (``properties``, ``items``…: a tree of objects is fine, the value ends somewhere); what
never ends is a cycle of keywords that apply to the *same* value: ``$ref``/``$dynamicRef``, ``allOf``,
``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else`` and ``dependentSchemas``. Such a cycle is refused,
and so is a reference to nothing (it would fail every call).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from nami_yaml.registry.draft import ToolDraft
from nami_yaml.spec.yamlpos import JsonPath

REFS = ("$ref", "$dynamicRef")
SAME_VALUE_ONE = ("not", "if", "then", "else")
SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
SAME_VALUE_MAPS = ("dependentSchemas",)
_DATA = frozenset({"enum", "const", "default", "examples"})  # values are data: a "$ref" key there is a key
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _schemas(node: Any, path: JsonPath, resource: JsonPath) -> Iterator[tuple[JsonPath, JsonPath, dict[str, Any]]]:
    """Every schema object with its path and the path of its resource (the nearest ``$id``, else the root)."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _schemas(item, (*path, index), resource)
        return
    if not isinstance(node, dict):
        return
    if path and isinstance(node.get("$id"), str):
        resource = path
    yield path, resource, node
    for key, value in node.items():
        if key in _NAMED and isinstance(value, dict):
            for name, sub in value.items():
                yield from _schemas(sub, (*path, key, name), resource)
        elif key not in _DATA and isinstance(value, (dict, list)):
            yield from _schemas(value, (*path, key), resource)


def _resolve(schema: Any, resource: JsonPath, ref: str, anchors: dict[tuple[JsonPath, str], JsonPath]) -> JsonPath | None:
    """The path of what the local ``ref`` names, or None when it names nothing."""
    if not ref.startswith("#"):
        return None  # not local: check_local_refs refuses it
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return anchors.get((resource, fragment))
    node: Any = schema
    path: JsonPath = resource
    for step in resource:
        node = node[step]
    for raw in fragment.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node, path = node[part], (*path, part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node, path = node[int(part)], (*path, int(part))
        else:
            return None
    return path if isinstance(node, (dict, bool)) else None


def ref_problems(schema: Any) -> list[tuple[JsonPath, str]]:
    """Each ``$ref`` that names nothing, and one ``$ref`` of each cycle that never reaches into the value,
    with its path in ``schema`` and a message."""
    if not isinstance(schema, dict):
        return []
    nodes = list(_schemas(schema, (), ()))
    anchors = {(resource, node[key]): path for path, resource, node in nodes
               for key in ("$anchor", "$dynamicAnchor") if isinstance(node.get(key), str)}
    problems: list[tuple[JsonPath, str]] = []
    edges: dict[JsonPath, list[tuple[JsonPath, JsonPath]]] = {}  # schema -> (where the step is, next schema)
    for path, resource, node in nodes:
        steps = edges.setdefault(path, [])
        for key in REFS:
            ref = node.get(key)
            if isinstance(ref, str) and ref.startswith("#"):
                target = _resolve(schema, resource, ref, anchors)
                if target is None:
                    problems.append(((*path, key), f"{key} {ref!r} names nothing in this schema"))
                else:
                    steps.append(((*path, key), target))
        steps += [((*path, key), (*path, key)) for key in SAME_VALUE_ONE if isinstance(node.get(key), dict)]
        steps += [((*path, key, i), (*path, key, i)) for key in SAME_VALUE_LISTS if isinstance(node.get(key), list)
                  for i in range(len(node[key]))]
        steps += [((*path, key, name), (*path, key, name)) for key in SAME_VALUE_MAPS
                  if isinstance(node.get(key), dict) for name in node[key]]
    problems.extend(_cycles(edges))
    return problems


def _cycles(edges: dict[JsonPath, list[tuple[JsonPath, JsonPath]]]) -> list[tuple[JsonPath, str]]:
    """One problem per cycle of same-value steps, at the ``$ref`` that closes it (depth-first, iteratively:
    the schema that could overflow Python's stack must not overflow this check's)."""
    state: dict[JsonPath, int] = {}  # 1: on the current path, 2: done
    found: list[tuple[JsonPath, str]] = []
    for start in edges:
        if state.get(start):
            continue
        trail: list[JsonPath] = [start]
        pending = [iter(edges.get(start, ()))]
        state[start] = 1
        while pending:
            step = next(pending[-1], None)
            if step is None:
                state[trail.pop()] = 2
                pending.pop()
                continue
            where, target = step
            if state.get(target) == 1:
                loop = trail[trail.index(target):]
                shown = " -> ".join(_pointer(p) for p in [*loop, target])
                found.append((where, f"{where[-1] if isinstance(where[-1], str) else 'it'} comes back to itself "
                                     f"without reaching into the value ({shown}): validating would never end"))
            elif not state.get(target):
                state[target] = 1
                trail.append(target)
                pending.append(iter(edges.get(target, ())))
    return found


def _pointer(path: JsonPath) -> str:
    return "#" + "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in path)


def check_ref_targets(draft: ToolDraft) -> None:
    """Every local ``$ref`` names a schema of this schema, and none comes back to itself (see above)."""
    for where, message in ref_problems(draft.parameters):
        draft.error((draft.parameters_key, *where), message)
