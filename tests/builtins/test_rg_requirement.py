"""The README's test command passes on a machine without ripgrep (the rg cases skip, saying why), while CI,
which sets NAMI_REQUIRE_RG=1, fails when rg is missing, so both engines are always tested there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_CASE = "test_glob_skips_and_explicit_hidden_path"


def pytest_without_rg(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    no_rg = tmp_path / "bin"
    no_rg.mkdir()
    inherited = {k: v for k, v in os.environ.items() if k != "NAMI_REQUIRE_RG"}  # CI sets it for this run
    full_env = {**inherited, "PATH": str(no_rg), **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-k", ONE_CASE,
                           "tests/builtins/test_search.py"], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=300)


def test_without_rg_the_rg_cases_skip_with_the_reason(tmp_path: Path) -> None:
    result = pytest_without_rg(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "SKIPPED [1] tests/builtins/test_search.py" in result.stdout
    assert "ripgrep (rg) is not on PATH" in result.stdout


def test_ci_requires_rg(tmp_path: Path) -> None:
    result = pytest_without_rg(tmp_path, NAMI_REQUIRE_RG="1")
    assert result.returncode == 1
    assert "NAMI_REQUIRE_RG=1 requires it" in result.stdout
    assert "export NAMI_REQUIRE_RG=1" in (ROOT / ".ci" / "run").read_text()
