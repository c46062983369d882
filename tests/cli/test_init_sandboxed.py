"""The default experience stays smooth in the sandbox: the project `nami init` makes, its example tool,
the library's git tools, their docs command and bash all work sandboxed, with no sandbox key added
(real bwrap, real nami processes, the model over HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.sandboxing import need_bwrap


def nami(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nami_yaml", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, input="", timeout=120)


def test_nami_inits_project_runs_sandboxed_without_keys(workdir: Path, temp_home: Path) -> None:
    need_bwrap()
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    assert nami("init", "--yes", cwd=workdir).returncode == 0
    assert "git" in (workdir / "agent.yaml").read_text() and "sandbox" not in (workdir / "agent.yaml").read_text()
    assert nami("trust", "--yes", cwd=workdir).returncode == 0
    calls = [call("count_lines", {"paths": ["agent.yaml"]}), call("git_status", {}),
             call("tool_docs", {"name": "git_status"}), call("bash", {"command": "echo made > made.txt && cat made.txt"})]
    with FakeOpenAIServer([tool_calls(*calls), text("done")]) as server:
        done = nami("run", "--yes", "--json", "look around", cwd=workdir,
                    env={"NAMI_BASE_URL": server.base_url, "NAMI_MODEL": "m", "DEEPSEEK_API_KEY": "sk-test"})
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert sorted(results) == ["bash", "count_lines", "git_status", "tool_docs"]
    for name, result in results.items():
        assert result["ok"] and "[sandbox:" not in result["content"], (name, result["content"])
    assert "agent.yaml" in results["count_lines"]["content"] and "##" in results["git_status"]["content"]
    assert "usage: git status" in results["tool_docs"]["content"]
    assert (workdir / "made.txt").read_text() == "made\n"
    assert not [e for e in events if e["type"] == "notice"]  # the sandbox works here: nothing to say
    audit = temp_home / ".local" / "state" / "nami" / "audit.jsonl"
    modes = {line["tool"]: line["plan"].get("sandbox", {}).get("mode")
             for line in map(json.loads, audit.read_text().splitlines())}
    assert modes["count_lines"] == modes["git_status"] == modes["bash"] == "workspace-write"  # really sandboxed
