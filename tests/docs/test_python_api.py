"""docs/python-api.md is executable: every Python block runs as a user's script, the complete example
exactly as shown, against the fake server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, demo_responder

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def run_script(code: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, "-P", str(script)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_complete_script_runs_as_documented(tmp_path: Path) -> None:
    [script] = [b for b in blocks() if "FakeOpenAIServer(script)" in b]
    result = run_script(script, tmp_path, dict(os.environ))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    events = [json.loads(line) for line in lines[:-1]]
    assert lines[-1] == "- ship it"
    assert [e["type"] for e in events if e["type"] in ("tool_call", "approval", "final")] == [
        "tool_call", "approval", "tool_call", "approval", "final"]
    approvals = [e for e in events if e["type"] == "approval"]
    assert [a["approved"] for a in approvals] == [True, False]
    assert approvals[1]["source"] == "approve()" and approvals[1]["reason"] == "this script only writes into notes/"
    refused = [e for e in events if e["type"] == "tool_result"][1]["content"]
    assert refused.startswith("Denied by approve(): bash command=")
    assert "Reason: this script only writes into notes/." in refused
    assert events[-1]["status"] == "answered"
    assert events[-1]["text"] == "Wrote notes/todo.md; removing build/ was refused."
    assert not (tmp_path / "build").exists()


def test_every_other_block_runs(tmp_path: Path) -> None:
    others = [b for b in blocks() if "FakeOpenAIServer(script)" not in b]
    assert len(others) >= 2
    with FakeOpenAIServer(responder=demo_responder) as server:
        env = {**os.environ, "NAMI_BASE_URL": server.base_url, "NAMI_MODEL": "fake-model"}
        for index, code in enumerate(others):
            folder = tmp_path / f"block{index}"
            folder.mkdir()
            (folder / "agent.yaml").write_text("tools: {builtin: [list_dir]}\n")
            result = run_script(code, folder, env)
            assert result.returncode == 0, f"block {index}:\n{code}\n{result.stderr}"
