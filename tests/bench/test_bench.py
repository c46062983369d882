"""`python -m bench --quick` (the CI subset) runs every section and yields every row with a sane value, so the
benchmark cannot rot. Figures are never asserted on time: only on what is not a timing (openai not
imported, the prefix kept, the token counts adding up)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.__main__ import SECTIONS, collect  # noqa: E402
from bench.common import Row, Settings  # noqa: E402
from bench.table import BEGIN, END, markdown  # noqa: E402

KEYS = [
    "startup.python", "startup.openai",
    *(f"startup.{c}{suffix}" for c in ("help", "tools_list", "check") for suffix in ("", ".vs_python", ".no_openai")),
    "load.generated", "load.library",
    "steps.stream", "steps.plain",
    "stream.first_byte.pty", "stream.first_byte.pipe",
    "parallel.four_reads",
    "memory.flood", "memory.resume",
    *(f"tokens.{part}.{unit}" for part in ("prompt", "tools", "total") for unit in ("chars", "tokens")),
    "prefix.stable",
    "batch.workers1", "batch.workers2", "batch.workers4",
    "bash_rules.slowest",
    "sandbox.extra",
]


@pytest.fixture(scope="module")
def rows() -> dict[str, Row]:
    found = collect(Settings(quick=True, repeat=1), SECTIONS, progress=False)
    return {row.key: row for row in found}


def test_every_row_is_there(rows: dict[str, Row]) -> None:
    assert sorted(rows) == sorted(KEYS)
    table = markdown(rows.values())
    assert len(table.splitlines()) == len(KEYS) + 2
    assert all(line.startswith("|") and line.endswith("|") for line in table.splitlines())


def test_the_values_are_sane(rows: dict[str, Row]) -> None:
    assert all(math.isfinite(row.value) for row in rows.values())
    for key in ("startup.python", "startup.openai", "startup.help", "startup.tools_list", "startup.check",
                "load.generated", "load.library", "parallel.four_reads", "batch.workers1", "batch.workers4",
                "bash_rules.slowest"):
        assert rows[key].value > 0, key
    for key in ("stream.first_byte.pty", "stream.first_byte.pipe"):
        assert rows[key].value > -1000 and rows[key].baseline is not None, key  # ms; a read may beat the log
    for key in ("memory.flood", "memory.resume"):
        assert 5 < rows[key].value < 10_000, key  # MB: a Python process, not nothing, not everything
    for key in ("steps.stream", "steps.plain"):
        assert rows[key].baseline is not None and rows[key].target, key


def test_what_is_not_a_timing(rows: dict[str, Row]) -> None:
    for command in ("help", "tools_list", "check"):
        assert rows[f"startup.{command}.no_openai"].value == 0, f"nami {command} imports openai"
    assert rows["prefix.stable"].value == 100
    assert rows["tokens.total.chars"].value == rows["tokens.prompt.chars"].value + rows["tokens.tools.chars"].value
    assert rows["tokens.total.chars"].met  # the same budget tests/test_lean_requests.py holds


def test_the_command_prints_the_machine_and_the_table(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Benchmarks\n\nhand-written\n\n{BEGIN}\nold\n{END}\n\nmore text\n")
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "tokens,bash_rules",
                           "--write", str(page), "--notes", "CI"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "- CPU: " in done.stdout and "- Python: " in done.stdout and "- Notes: CI" in done.stdout
    assert "| measure | nami | baseline (same run) | ratio | target |" in done.stdout
    text = page.read_text()
    assert "old" not in text and "hand-written" in text and text.endswith("more text\n")
    assert done.stdout in text


def test_a_bad_section_is_a_clear_error() -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--only", "nope"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "unknown section(s): nope" in done.stderr and "Traceback" not in done.stderr
