"""The README's test command passes on a machine without bubblewrap (the sandbox's tests skip, saying why),
while CI, which sets NAMI_REQUIRE_BWRAP=1, fails when it is missing, so the sandbox is always tested there."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import pytest_without

ROOT = Path(__file__).resolve().parents[2]
ONE_CASE = "test_stdin_and_the_environment_reach_the_sandboxed_process"


def pytest_without_bwrap(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # What the case runs, and no bwrap.
    return pytest_without(tmp_path, "NAMI_REQUIRE_BWRAP", "tests/runners/test_sandbox.py", ONE_CASE, ("bash", "tr"),
                          **env)


def test_without_bwrap_the_sandbox_tests_skip_with_the_reason(tmp_path: Path) -> None:
    result = pytest_without_bwrap(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "bubblewrap (bwrap) is not installed" in result.stdout


def test_ci_requires_bwrap(tmp_path: Path) -> None:
    result = pytest_without_bwrap(tmp_path, NAMI_REQUIRE_BWRAP="1")
    assert result.returncode == 1
    assert "NAMI_REQUIRE_BWRAP=1 requires it" in result.stdout
    assert "export NAMI_REQUIRE_BWRAP=1" in (ROOT / ".ci" / "run").read_text()
