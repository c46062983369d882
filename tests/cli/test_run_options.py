"""``nami run --approve RISKS`` and its mistakes, through a real nami process and the fake server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls


def run(server: FakeOpenAIServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nami_yaml", "run", *args], cwd=cwd, capture_output=True,
                          text=True, input="", timeout=60, env={**os.environ, "NAMI_BASE_URL": server.base_url})


def test_approve_by_risk(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("write_file", {"path": "w.txt", "content": "w"}),
                               call("bash", {"command": "touch b.txt"})), text("done"))
    result = run(fake_openai, workdir, "--approve", "read,write", "go")
    assert result.returncode == 0, result.stderr
    assert (workdir / "w.txt").exists() and not (workdir / "b.txt").exists()
    assert "denied: bash (by no approver)" in result.stderr


def test_an_unknown_risk_is_a_usage_error(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    result = run(fake_openai, workdir, "--approve", "write,rm", "go")
    assert result.returncode == 2 and "unknown risk rm; risks are read, write, exec" in result.stderr
    assert fake_openai.requests == []
