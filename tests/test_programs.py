"""The required-programs switch CI uses: a missing program fails there instead of skipping."""

from __future__ import annotations

import os
import re
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


def pytest_without_mcp(tmp_path: Path, required: str) -> subprocess.CompletedProcess[str]:
    """The MCP client tests with the SDK hidden (a package named mcp that fails to import comes first)."""
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}", "NAMI_REQUIRE_MCP": required}
    # -n 0: two files need no xdist workers (the project's addopts, -n auto, would start several).
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-n", "0",
                           "tests/mcp/test_client.py", "tests/test_paths.py"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_without_the_mcp_extra_its_tests_skip_with_the_reason(tmp_path: Path) -> None:
    result = pytest_without_mcp(tmp_path, "")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SKIPPED [1]" in result.stdout and "the mcp extra is not installed" in result.stdout


def test_ci_requires_the_mcp_extra(tmp_path: Path) -> None:
    result = pytest_without_mcp(tmp_path, "1")
    assert result.returncode != 0
    assert "NAMI_REQUIRE_MCP=1 requires it" in result.stdout
    run_script = (ROOT / ".ci" / "run").read_text()
    installed = re.search(r"pip install --quiet -e '\.\[([a-z,]+)\]'", run_script)
    assert "export NAMI_REQUIRE_MCP=1" in run_script and installed and "mcp" in installed.group(1).split(",")


def pytest_with_hidden(tmp_path: Path, package: str, variable: str, tests: list[str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """``tests`` run with ``package`` hidden (a package of that name that fails to import comes first), once
    without ``variable`` and once with ``variable``=1 (what CI sets): the two runs by that value."""
    shadow = tmp_path / "shadow" / package
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('hidden for this test')\n")
    runs = {}
    for required in ("", "1"):
        env = {**os.environ, "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}", variable: required}
        runs[required] = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-n", "0",
                                         *tests], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return runs


def test_ci_requires_the_otel_extra(tmp_path: Path) -> None:
    """As for mcp: the telemetry tests with OpenTelemetry hidden skip saying why, and fail where CI requires it."""
    runs = pytest_with_hidden(tmp_path, "opentelemetry", "NAMI_REQUIRE_OTEL",
                              ["tests/telemetry/test_spans.py", "tests/test_paths.py"])
    assert runs[""].returncode == 0 and "the otel extra is not installed" in runs[""].stdout
    assert runs["1"].returncode != 0 and "NAMI_REQUIRE_OTEL=1 requires it" in runs["1"].stdout
    run_script = (ROOT / ".ci" / "run").read_text()
    installed = re.search(r"pip install --quiet -e '\.\[([a-z,]+)\]'", run_script)
    assert "export NAMI_REQUIRE_OTEL=1" in run_script and installed and "otel" in installed.group(1).split(",")


def test_ci_requires_the_headless_browser(tmp_path: Path) -> None:
    """The approvals page's browser tests with selenium hidden skip saying why, and fail where CI requires
    the browser (.ci/run installs Chromium and its driver and sets NAMI_REQUIRE_BROWSER=1)."""
    runs = pytest_with_hidden(tmp_path, "selenium", "NAMI_REQUIRE_BROWSER",
                              ["tests/serve/test_approvals_page.py", "-k", "without_the_page_token"])
    assert runs[""].returncode == 0 and "no headless browser here" in runs[""].stdout, runs[""].stdout
    assert runs["1"].returncode != 0 and "NAMI_REQUIRE_BROWSER=1 requires it" in runs["1"].stdout
    run_script = (ROOT / ".ci" / "run").read_text()
    assert "export NAMI_REQUIRE_BROWSER=1" in run_script and "apt-get install -y -qq chromium chromium-driver" in run_script
