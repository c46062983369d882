"""The markdown table the benchmark prints, and the block of docs/benchmarks.md it replaces."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from bench.common import Row

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def figure(value: float | None, unit: str) -> str:
    if value is None:
        return "not measured"
    if unit == "yes/no":
        return "yes" if value else "no"
    if unit in ("chars", "tokens", "tasks/min", "MB", "lines", "bytes"):
        return f"{value:,.0f} {unit}" if value >= 10 else f"{value:,.1f} {unit}"
    if unit == "%":
        return f"{value:.0f} %"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    if value >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def verdict(row: Row) -> str:
    if not row.target:
        return ""
    mark = {True: "met", False: "**missed**", None: ""}[row.met]
    return f"{row.target}: {mark}".rstrip(": ")


def markdown(rows: Iterable[Row]) -> str:
    lines = ["| measure | nami | baseline (same run) | ratio | target |",
             "|---|--:|---|--:|---|"]
    for row in rows:
        baseline = (f"{figure(row.baseline, row.unit)} ({row.baseline_label})" if row.baseline is not None
                    else row.baseline_label)  # e.g. "Pi: not measured (why)"
        ratio = f"{row.ratio:.2f}×" if row.ratio is not None else ""
        lines.append(f"| {row.label} | {figure(row.value, row.unit)} | {baseline} | {ratio} | {verdict(row)} |")
    return "\n".join(lines) + "\n"


def machine_lines(description: dict[str, str], notes: str = "") -> str:
    lines = [f"- {key}: {value}" for key, value in description.items()]
    if notes:
        lines.append(f"- Notes: {notes}")
    return "\n".join(lines) + "\n"


def print_rows(rows: Iterable[Row], out: TextIO | None = None) -> None:
    (out or sys.stdout).write(markdown(rows))


def replace_block(path: Path, block: str) -> None:
    """Put ``block`` between the markers of ``path``, leaving the hand-written text around it alone."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} … {END} block to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{block}{END}{tail}"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(new, encoding="utf-8")
    temporary.replace(path)  # never a half-written page
