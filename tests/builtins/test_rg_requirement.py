"""The README's test command passes on a machine without ripgrep (the rg cases skip, saying why), while CI,
which sets NAMI_REQUIRE_RG=1, fails when rg is missing, so both engines are always tested there."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import pytest_without

ROOT = Path(__file__).resolve().parents[2]
ONE_CASE = "test_glob_skips_and_explicit_hidden_path"


def pytest_without_rg(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return pytest_without(tmp_path, "NAMI_REQUIRE_RG", "tests/builtins/test_search.py", ONE_CASE, **env)


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
