"""A tool's ``output:``: its stdout shaped before the model reads it. The output is read as JSON, JSON
lines or lines, narrowed by a JMESPath expression (in-process, never a shell), its array cut at
``max_items``, and rendered compactly, one array item per line. Output that cannot be read so reaches the
model as text with a one-line note. Whenever shaping leaves something out, the whole unshaped stdout is in a
saved-output file and the result names it: nothing is lost."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from nami_yaml.runners.filters import GrepTimeout, apply_filters
from nami_yaml.runners.options import OutputShape
from nami_yaml.runners.output import save_text, truncate_text
from nami_yaml.runners.process import ProcessResult
from nami_yaml.spec.expressions import compiled

# Bytes of stdout read for shaping. Past this (it can only be in a saved file) the output goes as text.
MAX_SHAPED_INPUT = 32_000_000


@dataclass
class Shaped:
    """One output, shaped: ``text`` is what the model reads in place of the stdout."""

    text: str
    value: Any = None  # the shaped value, when ``parsed``
    parsed: bool = False
    selected: bool = False  # output.select narrowed it
    items: int | None = None  # the array's length before max_items cut it
    shown: int | None = None
    problem: str | None = None  # why it was not shaped: said to the model in one line
    filtered: str | None = None  # what output.grep/lines/head/tail left out

    @property
    def dropped(self) -> bool:
        """Whether the model sees less than the output held (compacted whitespace aside)."""
        return self.selected or self.filtered is not None or (
            self.items is not None and self.shown is not None and self.shown < self.items)


def parse(text: str, form: str) -> Any:
    """The output read as ``form`` (json, jsonl, lines). Raises ValueError with a one-line reason."""
    if form == "lines":
        return text.splitlines()
    if form == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    values = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})") from None
    return values


def render(value: Any, form: str) -> str:
    """Compact JSON, an array one item per line (so a cut between head and tail falls between items); the
    lines of ``lines`` output as lines while they are still a list of strings."""
    if form == "lines" and isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(_compact(item) for item in value) + "\n]"
    return _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def shape_text(text: str, shape: OutputShape) -> Shaped:
    """Shape one whole stdout, then filter its lines. Empty output is left as it is: there is nothing to read."""
    if not text.strip():
        return Shaped(text)
    shaped = Shaped(text) if shape.format == "text" else _read(text, shape)
    if not shape.filters or shaped.problem:
        return shaped
    try:
        filtered = apply_filters(shaped.text, shape)
    except GrepTimeout:
        return Shaped(text, problem=f"output.grep {shape.grep!r} took too long on this output")
    if filtered.note is not None:
        shaped.text, shaped.filtered, shaped.value = filtered.text, filtered.note, None
    return shaped


def _read(text: str, shape: OutputShape) -> Shaped:
    try:
        value = parse(text, shape.format)
    except ValueError as exc:
        return Shaped(text, problem=f"output.format is {shape.format}, but this output is {_is_not(exc)}")
    selected = False
    if shape.select:
        from jmespath.exceptions import JMESPathError

        try:
            value = compiled(shape.select).search(value)
        except JMESPathError as exc:  # a type error on this output (sum of nulls): the output is still shown
            return Shaped(text, problem=f"output.select failed on this output: {str(exc).splitlines()[0]}")
        selected = True
    items = shown = None
    if isinstance(value, list):
        items = len(value)
        if shape.max_items is not None and items > shape.max_items:
            value = value[: shape.max_items]
        shown = len(value)
    return Shaped(render(value, shape.format), value, True, selected, items, shown)


def _is_not(exc: ValueError) -> str:
    text = str(exc)
    return text if text.startswith("not ") else f"not JSON lines: {text}"


def stdout_whole(result: ProcessResult) -> str | None:
    """All of the process's stdout: in memory, or read back from its saved file; None when it is not
    there whole (it could not be saved, or it passed MAX_SHAPED_INPUT)."""
    if not result.stdout_truncated:
        return result.stdout
    path = result.stdout_file
    try:
        if path is None or path.stat().st_size > MAX_SHAPED_INPUT:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


@dataclass
class ShapedOutput:
    """A process result with its stdout shaped: the model's text, the details for events and MCP."""

    content: str
    value: Any
    details: dict[str, Any]
    truncated: bool  # the shaped text (or stderr) was still cut at max_output
    spill_path: Path | None


def shape_result(result: ProcessResult, shape: OutputShape, *, max_output: int, spill_dir: Path | None,
                 max_saved: int) -> ShapedOutput:
    whole = stdout_whole(result)
    if whole is None:
        shaped = Shaped(result.stdout, problem="the output was too long to read whole")
    else:
        shaped = shape_text(whole, shape)
    full = result.stdout_file
    if shaped.dropped and full is None:
        full, _ = save_text(whole or "", spill_dir, "stdout", max_saved)
    notes: list[str] = []
    if shaped.problem:
        notes.append(f"[{shaped.problem}; shown as text]")
        # As the process left it: capped, with the marker naming its saved file.
        text, cut, saved = result.stdout, result.truncated, result.spill_path
    else:
        text, saved = truncate_text(shaped.text, max_output, spill_dir, max_saved)
        cut = len(shaped.text) > max_output or (result.truncated and not result.stdout_truncated)  # or stderr
        if shaped.dropped:
            notes.append(f"[{_what_was_left_out(shaped)}; {_where(full)}]")
    stdout = "\n".join([text.rstrip(), *notes]) if text.strip() else "\n".join(notes)
    details: dict[str, Any] = {"format": shape.format, "parsed": shaped.parsed, "items": shaped.items,
                               "shown": shaped.shown, "full_output": str(full) if full else None}
    if shaped.parsed and shape.schema is not None:
        details["schema_errors"] = schema_mismatches(shape.schema, shaped.value)
    return ShapedOutput(replace(result, stdout=stdout).format(), shaped.value if shaped.parsed else None, details,
                        cut, saved or full or result.spill_path)


def _what_was_left_out(shaped: Shaped) -> str:
    parts = ["shaped by output.select"] if shaped.selected else []
    if shaped.items is not None and shaped.shown is not None and shaped.shown < shaped.items:
        parts.append(f"{shaped.shown:,} of {shaped.items:,} items shown (output.max_items)")
    if shaped.filtered:
        parts.append(shaped.filtered)
    return "; ".join(parts)


def _where(full: Path | None) -> str:
    return f"full output: {full}" if full is not None else "the full output could not be saved"


@cache
def _checker(text: str) -> Any:
    from nami_yaml.spec.json_schemas import checker

    return checker(json.loads(text))


def schema_mismatches(schema: dict[str, Any], value: Any) -> list[str]:
    """Where the shaped value departs from ``output.schema`` (checked at load to be a valid schema)."""
    from nami_yaml.spec.json_schemas import mismatches

    return mismatches(_checker(json.dumps(schema, sort_keys=True)), value, limit=3)
