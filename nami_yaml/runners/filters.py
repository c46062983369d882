"""``output:`` line filters that take parameters (``grep``, ``lines``, ``head``, ``tail``) and parameters
inside ``output.select``, in-process: no ``| grep`` or ``| head`` script needed.

Each call renders the tool's filters with its arguments once (:func:`rendered_shape`); a filter whose value
renders empty (an optional parameter not given) is off. A parameter inside ``select`` is inserted as a
JMESPath literal (a JSON value between backticks), never as query text, so a value cannot change the query.
``grep`` runs with the ``regex`` module under a time budget, so a pattern that backtracks cannot hold nami.
The full output is still saved whenever a filter leaves something out (runners/shape.py).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from nami_yaml.errors import ToolError
from nami_yaml.runners.options import OutputShape
from nami_yaml.runners.template import TemplateError, render_text

GREP_BUDGET = 2.0  # seconds for matching every line of one output
# {name} in a select: a bare {word} is no JMESPath (a multiselect hash needs `key: value`), so it is free.
SELECT_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")
_RANGE = re.compile(r"\s*(\d*)\s*-\s*(\d*)\s*")


class GrepTimeout(Exception):
    """The pattern did not finish within GREP_BUDGET."""


def select_refs(select: str) -> list[str]:
    return SELECT_PLACEHOLDER.findall(select)


def jmespath_literal(value: Any) -> str:
    """``value`` as a JMESPath JSON literal: `"text"`, `3`, `null` (a backtick inside is escaped)."""
    return "`" + json.dumps(value, ensure_ascii=True, sort_keys=True).replace("`", "\\`") + "`"


def render_select(select: str, values: Mapping[str, Any]) -> str:
    return SELECT_PLACEHOLDER.sub(lambda match: jmespath_literal(values.get(match.group(1))), select)


def rendered_shape(shape: OutputShape, values: Mapping[str, Any]) -> OutputShape:
    """``shape`` for one call: placeholders filled, numbers read. Raises ToolError for a value that
    cannot be used (not a whole number, a pattern that does not compile), before anything runs."""
    args = dict(values)
    select = render_select(shape.select, args) if shape.select else shape.select
    grep = _text(shape.grep, args, "grep")
    if grep:
        _pattern(grep)
    lines = _text(shape.lines, args, "lines").strip()
    if lines == "-":  # "{start}-{end}" with neither given
        lines = ""
    if lines and not _RANGE.fullmatch(lines):
        raise ToolError(f"output.lines {lines!r} is not a range of line numbers START-END (e.g. 10-20, 10-, -20)")
    return replace(shape, select=select, grep=grep or None, lines=lines or None,
                   head=_count(shape.head, args, "head"), tail=_count(shape.tail, args, "tail"))


def _text(template: str | None, args: dict[str, Any], key: str) -> str:
    if template is None:
        return ""
    try:
        return render_text(template, args)
    except TemplateError as exc:
        raise ToolError(f"output.{key}: {exc}") from None


def _count(template: int | str | None, args: dict[str, Any], key: str) -> int | None:
    if template is None or isinstance(template, int):
        return template
    text = _text(template, args, key).strip()
    if not text:
        return None
    if not text.isdigit():
        raise ToolError(f"output.{key} is {text!r}, which is not a whole number of lines")
    return int(text)


@lru_cache(maxsize=256)
def _pattern(pattern: str) -> Any:
    import regex

    try:
        return regex.compile(pattern)
    except (regex.error, ValueError) as exc:
        raise ToolError(f"output.grep {pattern!r} is not a valid regular expression: {exc}") from None


@dataclass
class Filtered:
    text: str
    note: str | None  # what the filters left out, for the model; None when they kept every line


def apply_filters(text: str, shape: OutputShape) -> Filtered:
    """grep, then lines, then head, then tail, on the lines of ``text``. Raises GrepTimeout."""
    lines = text.splitlines()
    total = len(lines)
    if shape.grep:
        pattern = _pattern(shape.grep)
        kept = []
        deadline = time.monotonic() + GREP_BUDGET
        for line in lines:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GrepTimeout(shape.grep)
            try:
                found = pattern.search(line, timeout=left)
            except TimeoutError:
                raise GrepTimeout(shape.grep) from None
            if found is not None:
                kept.append(line)
        lines = kept
    if shape.lines:
        match = _RANGE.fullmatch(shape.lines)
        assert match is not None  # checked by rendered_shape
        start = int(match.group(1)) if match.group(1) else 1
        end = int(match.group(2)) if match.group(2) else len(lines)
        lines = lines[max(start, 1) - 1:end]
    if isinstance(shape.head, int):
        lines = lines[:shape.head]
    if isinstance(shape.tail, int):
        lines = lines[len(lines) - shape.tail:] if shape.tail else []
    if len(lines) == total:
        return Filtered("\n".join(lines), None)
    return Filtered("\n".join(lines), f"{len(lines):,} of {total:,} lines shown ({_which(shape)})")


def _which(shape: OutputShape) -> str:
    parts = [f"output.grep {shape.grep!r}"] if shape.grep else []
    parts += [f"output.{key} {value}" for key, value in (("lines", shape.lines), ("head", shape.head),
                                                          ("tail", shape.tail)) if value not in (None, "")]
    return ", ".join(parts)
