"""Argv and stdin templates: ``{param}`` placeholders, ``{{``/``}}`` for literal braces, and ``{!param}``,
which fills nothing and switches its optional group on when ``param`` is off (not given, null, false, []).

Rendering never involves a shell. A value fills exactly the argv element it is written in, so quotes,
``$(...)``, ``;`` or newlines in a value are just characters of one argument.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
TARGET_PREFIX = "target."  # {target.context}: a var of the call's target (agent.yaml targets:), not a parameter
_TOKEN = re.compile(r"\{\{|\}\}|\{(!?" + _NAME + "|" + re.escape(TARGET_PREFIX) + _NAME + r")\}|\{|\}")
NEGATION = "!"


class TemplateError(ValueError):
    """A template is malformed (found when loading) or a value cannot be rendered (found per call)."""


@dataclass(frozen=True)
class Piece:
    text: str
    ref: str | None = None  # a parameter name, or None for literal text
    negated: bool = False  # {!name}: a switch that is on when the parameter is off; it renders nothing


def parse(template: str) -> list[Piece]:
    return list(_parse(template))


@lru_cache(maxsize=4096)
def _parse(template: str) -> tuple[Piece, ...]:
    """Cached: the loader's checks and every call of a tool parse the same few templates again and again."""
    pieces: list[Piece] = []
    pos = 0
    literal = ""
    for match in _TOKEN.finditer(template):
        literal += template[pos:match.start()]
        token = match.group(0)
        if token == "{{":
            literal += "{"
        elif token == "}}":
            literal += "}"
        elif match.group(1):
            if literal:
                pieces.append(Piece(literal))
                literal = ""
            name = match.group(1)
            pieces.append(Piece(token, name.removeprefix(NEGATION), negated=name.startswith(NEGATION)))
        else:
            raise TemplateError(
                f"unmatched '{token}' at offset {match.start()} in {template!r}: "
                f"write '{token * 2}' for a literal brace, or {{name}} for a parameter"
            )
        pos = match.end()
    literal += template[pos:]
    if literal:
        pieces.append(Piece(literal))
    return tuple(pieces)


def refs(template: str) -> list[str]:
    return [p.ref for p in parse(template) if p.ref]


ArgvPath = tuple[int, ...]  # where an element sits in a nested argv template: [2, 1] is command[2][1]


def is_element(item: Any) -> bool:
    """A text or number element (anything else in an argv template is refused by the schema)."""
    return isinstance(item, (str, int, float)) and not isinstance(item, bool)


def walk_argv(items: list[Any], prefix: ArgvPath = ()) -> Iterator[tuple[ArgvPath, str, int]]:
    """Every element of an argv template: its index path, its text, and its group depth (0 = not in a group)."""
    for index, item in enumerate(items):
        if isinstance(item, list):
            yield from walk_argv(item, (*prefix, index))
        elif is_element(item):
            yield (*prefix, index), str(item), len(prefix)


def walk_groups(items: list[Any], prefix: ArgvPath = ()) -> Iterator[tuple[ArgvPath, list[Any]]]:
    """Every optional group (a nested list) with its index path, outer groups first."""
    for index, item in enumerate(items):
        if isinstance(item, list):
            yield (*prefix, index), item
            yield from walk_groups(item, (*prefix, index))


def group_switches(group: list[Any]) -> list[str]:
    """The parameters that switch a group: those referenced directly in it, not in nested groups (a negated
    ``{!name}`` among them)."""
    names: list[str] = []
    for item in group:
        if is_element(item):
            names.extend(refs(str(item)))
    return names


def negated_switches(group: list[Any]) -> list[str]:
    """The ``{!name}`` elements directly in ``group``: it is on only while each of these is off."""
    return [p.ref for item in group if is_element(item) for p in parse(str(item)) if p.ref and p.negated]


def whole_element_refs(group: list[Any]) -> list[str]:
    """Parameters that fill a whole element directly in ``group``: an array among them repeats the group."""
    names = []
    for item in group:
        if is_element(item):
            pieces = parse(str(item))
            if len(pieces) == 1 and pieces[0].ref and not pieces[0].negated:
                names.append(pieces[0].ref)
    return names


def repeating_refs(group: list[Any]) -> list[str]:
    """Parameters written directly in ``group``, whole or inside an element (``--label={names}``): an array
    among them repeats the group once per item."""
    return [p.ref for item in group if is_element(item) for p in parse(str(item)) if p.ref and not p.negated]


def scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def is_off(value: Any) -> bool:
    """Absent, null, false or an empty array switch an optional group off."""
    return value is None or value is False or value == []


class ArgvRenderer:
    """Renders a parsed argv template for one call's (validated, defaulted) arguments. ``maps``: the tool's
    ``map:``, a parameter's value -> the literal elements its whole-element placeholder becomes."""

    def __init__(self, allow_dash: frozenset[str] = frozenset(), maps: Mapping[str, Mapping[str, Any]] | None = None):
        self.allow_dash = allow_dash
        self.maps = maps or {}

    def render(self, items: list[Any], args: dict[str, Any]) -> list[str]:
        argv: list[str] = []
        for item in items:
            if isinstance(item, list):
                argv.extend(self._group(item, args))
            else:
                argv.extend(self._element(str(item), args))
        return argv

    def _group(self, group: list[Any], args: dict[str, Any]) -> list[str]:
        """Kept when every switch is on; repeated once per item when an array fills a whole element in it."""
        negated = negated_switches(group)
        if any(is_off(args.get(name)) for name in group_switches(group) if name not in negated):
            return []
        if any(not is_off(args.get(name)) for name in negated):
            return []
        arrays = list(dict.fromkeys(n for n in repeating_refs(group) if isinstance(args.get(n), list)))
        if not arrays:
            return self.render(group, args)
        if len(arrays) > 1:
            raise TemplateError(f"an optional group repeats once per item of one array; "
                                f"{' and '.join(map(repr, arrays))} are both arrays")
        name = arrays[0]
        argv: list[str] = []
        for item in args[name]:
            if isinstance(item, (dict, list)):
                raise TemplateError(f"parameter '{name}' holds a nested {describe(item)}; expected text or numbers")
            argv.extend(self.render(group, {**args, name: item}))
        return argv

    def _element(self, template: str, args: dict[str, Any]) -> list[str]:
        pieces = parse(template)
        if len(pieces) == 1 and pieces[0].negated:
            return []  # a switch only: its group was kept because the parameter is off
        if len(pieces) == 1 and pieces[0].ref:
            return self._whole(pieces[0].ref, args.get(pieces[0].ref))
        text = ""
        for piece in pieces:
            if piece.negated:
                raise TemplateError(f"{{!{piece.ref}}} only switches a group: it must be a whole element")
            if piece.ref is None:
                text += piece.text
                continue
            value = args.get(piece.ref)
            if isinstance(value, (list, dict)):
                raise TemplateError(
                    f"parameter '{piece.ref}' is an {describe(value)}; it can only fill a whole argv element"
                )
            rendered = scalar_text(value)
            if not text:  # this value starts the element ("{a}{b}" with a="" lets b start it)
                self._check_dash(piece.ref, rendered)
            text += rendered
        _check_nul(text)
        return [text]

    def _whole(self, name: str, value: Any) -> list[str]:
        if name in self.maps and value is not None:
            mapped = self.maps[name].get(scalar_text(value))
            if mapped is None:  # the loader checks every enum value is mapped; the schema refuses others
                raise TemplateError(f"value {scalar_text(value)[:40]!r} of parameter '{name}' is not one map: gives")
            return [str(item) for item in mapped]  # the author's literal elements: no dash rule, no template
        if isinstance(value, bool):
            # A boolean filling a whole element is a switch: it only turns its optional group on.
            return []
        values = value if isinstance(value, list) else [value]
        out = []
        for item in values:
            if isinstance(item, (dict, list)):
                raise TemplateError(f"parameter '{name}' holds a nested {describe(item)}; expected text or numbers")
            text = scalar_text(item)
            self._check_dash(name, text)
            _check_nul(text)
            out.append(text)
        return out

    def _check_dash(self, name: str, text: str) -> None:
        # A target's vars are written in agent.yaml by the project, not chosen by the model.
        if text.startswith("-") and name not in self.allow_dash and not name.startswith(TARGET_PREFIX):
            raise TemplateError(
                f"value {text[:40]!r} of parameter '{name}' starts with '-' and would be read as an option; "
                f"pass a value that does not start with '-'"
            )


def describe(value: Any) -> str:
    return "object" if isinstance(value, dict) else "array"


def _check_nul(text: str) -> None:
    if "\x00" in text:
        raise TemplateError("a value contains a NUL byte, which cannot be passed to a program")


def render_text(template: str, args: dict[str, Any]) -> str:
    """For stdin: every placeholder is replaced by the value's text (JSON for arrays and objects)."""
    out = "".join(scalar_text(args.get(p.ref)) if p.ref else p.text for p in parse(template))
    return out
