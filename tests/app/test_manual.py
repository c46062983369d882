"""``nami tools call``: the person calling answers what the defaults would ask, but rules still decide."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, write_file]}\npermissions: {write: deny}\n"
        "rules:\n  - tool: bash\n    command: touch\n    decision: ask\n    reason: touching is special\n")
    subprocess.run(["nami", "trust", "--yes"], cwd=workdir, check=True, capture_output=True)
    return workdir


def call(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nami", "tools", "call", *args], cwd=project, capture_output=True, text=True, input="")


def test_a_default_ask_is_answered_by_calling_it(project: Path) -> None:
    result = call(project, "bash", "command=echo by hand")
    assert (result.returncode, result.stdout) == (0, "by hand\n")


def test_a_rule_that_asks_needs_a_yes(project: Path) -> None:
    refused = call(project, "bash", "command=touch made")
    assert refused.returncode == 1 and not (project / "made").exists()
    assert "not approved (no terminal; use --yes to allow)" in refused.stderr
    assert "Error: denied by no approver: " in refused.stderr and refused.stdout == ""
    assert "there is no terminal to ask on (rule agent.yaml:4:5 asks: touching is special)" in refused.stderr
    approved = call(project, "bash", "command=touch made", "--yes")
    assert approved.returncode == 0 and (project / "made").exists()


def test_a_deny_is_never_run_by_hand(project: Path) -> None:
    result = call(project, "write_file", "path=x.txt", "content=x", "--yes")
    assert result.returncode == 1 and not (project / "x.txt").exists()
    assert "Error: denied by permissions.write: " in result.stderr
