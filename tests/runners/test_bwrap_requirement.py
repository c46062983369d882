"""The README's test command passes on a machine without bubblewrap (the sandbox's tests skip, saying why),
while CI, which sets NAMI_REQUIRE_BWRAP=1, fails when it is missing, so the sandbox is always tested there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_CASE = "test_stdin_and_the_environment_reach_the_sandboxed_process"


def pytest_without_bwrap(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in ("bash", "tr"):  # what the case runs; bwrap is not there
        (folder / program).symlink_to(os.path.realpath(f"/bin/{program}"))
    inherited = {k: v for k, v in os.environ.items() if k != "NAMI_REQUIRE_BWRAP"}  # CI sets it for this run
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-k", ONE_CASE,
                           "tests/runners/test_sandbox.py"], cwd=ROOT, env={**inherited, "PATH": str(folder), **env},
                          capture_output=True, text=True, timeout=300)


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
