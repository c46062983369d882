"""docs/hooks.md's two example hooks, run as written: the business-hours PreToolUse hook (with a `date`
stand-in first on the PATH) and the PostToolUse hook posting each write to a webhook on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.app.agent import Agent
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.local_http import QuietHandler, serving
from tests.programs import need, need_bwrap

DOC = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
SCRIPT = re.compile(r"^```bash\n(#!/bin/sh\n# (\.nami/hooks/[\w.-]+):.*?)^```", re.S | re.M)


def example(name: str) -> str:
    scripts = {path: body for body, path in SCRIPT.findall(DOC.read_text(encoding="utf-8"))}
    return scripts[f".nami/hooks/{name}"]


@pytest.fixture
def workspace(workdir: Path, temp_home: Path) -> Path:
    need_bwrap()
    need("jq")
    for name in ("business-hours.sh", "tell-the-team.sh"):
        hook = workdir / ".nami" / "hooks" / name
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(example(name))
        hook.chmod(0o755)
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, write_file]}\npermissions: {write: allow}\nhooks:\n"
        "  PreToolUse:\n    - {matcher: '^(bash|kubectl_delete)$', command: [.nami/hooks/business-hours.sh]}\n"
        "  PostToolUse:\n    - matcher: '^(write_file|edit_file)$'\n      command: [.nami/hooks/tell-the-team.sh]\n"
        "      sandbox: {network: true}\n")
    return workdir


def at(workspace: Path, monkeypatch: pytest.MonkeyPatch, day: str, hour: str) -> None:
    """`date` answers as if it were that day (1 = Monday) and hour: a stand-in in the workspace, first on PATH."""
    folder = workspace / "bin"
    folder.mkdir(exist_ok=True)
    stand_in = folder / "date"
    stand_in.write_text(f'#!/bin/sh\ncase "$1" in +%u) echo {day};; +%H) echo {hour};; *) echo "day {day} {hour}:00";; esac\n')
    stand_in.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


def bash_result(command: str) -> str:
    with FakeOpenAIServer([tool_calls(call("bash", {"command": command})), text("ok")]) as server:
        Agent.from_config(base_url=server.base_url, model="m", trust=True, assume_yes=True).run("go")
        return server.requests[1]["messages"][-1]["content"]


def test_kubectl_delete_is_refused_on_a_saturday(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at(workspace, monkeypatch, "6", "10")
    result = bash_result("echo kubectl delete pod web-1")
    assert "kubectl delete runs on weekdays from 9 to 18 only" in result
    assert bash_result("echo kubectl get pods").strip() == "kubectl get pods"


def test_kubectl_delete_runs_on_a_tuesday_morning(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at(workspace, monkeypatch, "2", "10")
    assert bash_result("echo kubectl delete pod web-1").strip() == "kubectl delete pod web-1"


def test_each_write_is_posted_to_the_team(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("curl")
    received: list[dict[str, Any]] = []

    class Webhook(QuietHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.reply(200, b"ok")

    with serving(Webhook) as url:
        monkeypatch.setenv("TEAM_WEBHOOK", url)
        with FakeOpenAIServer([tool_calls(call("write_file", {"path": "notes.md", "content": "x"})),
                               text("ok")]) as server:
            Agent.from_config(base_url=server.base_url, model="m", trust=True).run("go")
    assert len(received) == 1 and received[0]["text"].startswith("nami wrote notes.md (session ")
