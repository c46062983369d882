"""The required-programs switch CI uses: a missing program fails there instead of skipping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TEST = """
from tests.programs import needs

@needs("nami-no-such-program")
def test_uses_it():
    assert False, "never reached"
"""


def run(tmp_path: Path, required: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_uses.py").write_text(TEST)
    env = {"PATH": "/usr/bin:/bin", "NAMI_REQUIRE_PROGRAMS": required, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_missing_program_skips_with_the_reason(tmp_path: Path) -> None:
    result = run(tmp_path, "")
    assert result.returncode == 0 and "nami-no-such-program is not installed here" in result.stdout


def test_a_required_missing_program_fails(tmp_path: Path) -> None:
    result = run(tmp_path, "git,nami-no-such-program")
    assert result.returncode == 1 and "NAMI_REQUIRE_PROGRAMS requires it" in result.stdout
    assert "NAMI_REQUIRE_PROGRAMS=" in (ROOT / ".ci" / "run").read_text()
