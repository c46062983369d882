"""The Python examples of docs/sessions.md and docs/tokens.md run as a user's scripts, as shown."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"), flags=re.S)


def run_block(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, "-P", str(script)], cwd=folder, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("doc", "expected"), [("sessions.md", ["It was 7."])])
def test_python_examples_run(doc: str, expected: list[str], tmp_path: Path) -> None:
    blocks = python_blocks(doc)
    assert len(blocks) == len(expected)
    for index, (code, output) in enumerate(zip(blocks, expected, strict=True)):
        folder = tmp_path / f"block{index}"
        folder.mkdir()
        result = run_block(code, folder)
        assert result.returncode == 0, f"{doc} block {index}:\n{result.stderr}"
        assert result.stdout.strip() == output
