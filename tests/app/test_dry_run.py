"""A dry run executes nothing (reads included), tells the model what would have run, and ends with the list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.app.dry_run import NOT_EXECUTED
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.helpers import PIPELINE_LINE, PIPELINE_SHOWN, PIPELINE_TOOL, PIPELINE_WORD, write

MARKER = """\
name: make_marker
description: Create a marker file.
risk: write
parameters:
  type: object
  properties:
    name: {type: string}
  required: [name]
command: [touch, "{name}"]
"""
READER = """\
name: count_reads
description: A read tool that leaves a trace when it runs.
risk: read
command: [touch, read-ran]
"""


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "marker.yaml").write_text(MARKER)
    (workdir / "tools" / "reader.yaml").write_text(READER)
    (workdir / "agent.yaml").write_text(
        "model: {provider: custom, name: fake-model}\n"
        "tools: {builtin: [write_file, bash, read_file], files: [tools/]}\n"
        "rules:\n  - tool: bash\n    command: rm\n    decision: deny\n    reason: never\n"
        "  - tool: make_marker\n    decision: allow\n")
    (workdir / "present.txt").write_text("here\n")
    return workdir


SCRIPT = [
    tool_calls(call("write_file", {"path": "written.txt", "content": "x"}),
               call("make_marker", {"name": "marker.txt"}),
               call("bash", {"command": "touch bashed.txt"}),
               call("count_reads", {}),
               call("read_file", {"path": "present.txt"}),
               call("bash", {"command": "rm present.txt"}),
               call("nope", {})),
    text("All done."),
]
CREATED = ["written.txt", "marker.txt", "bashed.txt", "read-ran"]


def test_nothing_runs_and_each_result_says_what_would_have(project: Path) -> None:
    model = ScriptedModel(list(SCRIPT))
    events: list[Any] = []
    agent = Agent.from_config(client=model, trust=True, dry_run=True, on_event=events.append)
    outcome = agent.run("do everything")
    assert outcome.final_text == "All done."
    assert [name for name in CREATED if (project / name).exists()] == []
    assert (project / "present.txt").read_text() == "here\n"
    results = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0].startswith(f"{NOT_EXECUTED}. It would run: write_file path=\"written.txt\"")
    assert results[1] == f"{NOT_EXECUTED}. It would run: touch marker.txt (in {project})"
    assert results[2].startswith(f"{NOT_EXECUTED}. It would run: bash command=\"touch bashed.txt\"")
    assert results[3] == f"{NOT_EXECUTED}. It would run: touch read-ran (in {project})"
    assert results[4].startswith(f"{NOT_EXECUTED}. It would run: read_file path=\"present.txt\"")
    assert results[5].startswith("Denied by rule agent.yaml:4:5: ")
    assert results[6].startswith("Error: unknown tool 'nope'")
    # The list comes just before `final`.
    assert [e.type for e in events[-2:]] == ["dry_run", "final"]
    calls = events[-2].calls
    assert [(c["tool"], c["outcome"]) for c in calls] == [
        ("write_file", "would ask"), ("make_marker", "would run"), ("bash", "would ask"), ("count_reads", "would run"),
        ("read_file", "would run"), ("bash", "denied"), ("nope", "invalid")]
    assert calls[0]["by"] == "permissions.write" and calls[0]["plan"]["entrypoint"] == "nami_yaml.builtins.files:write_file"
    assert calls[1]["by"] == "rule agent.yaml:8:5" and calls[1]["plan"]["argv"] == ["touch", "marker.txt"]
    assert calls[5]["by"] == "rule agent.yaml:4:5" and calls[5]["detail"] == "never"
    assert not default_audit_path().exists()


def test_a_second_run_lists_only_its_own_calls(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("count_reads", {})), text("one"), tool_calls(call("make_marker",
                                                                                               {"name": "m"})), text("two")])
    events: list[Any] = []
    agent = Agent.from_config(client=model, trust=True, dry_run=True, on_event=events.append)
    agent.run("first")
    agent.run("second")
    lists = [e.calls for e in events if e.type == "dry_run"]
    assert [[c["tool"] for c in calls] for calls in lists] == [["count_reads"], ["make_marker"]]


def run_nami(server: FakeOpenAIServer, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nami_yaml", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "NAMI_BASE_URL": server.base_url}, input="", timeout=60)


def test_nami_run_dry_run(project: Path, fake_openai: FakeOpenAIServer) -> None:
    subprocess.run(["nami", "trust", "--yes"], cwd=project, check=True, capture_output=True)
    fake_openai.add(*SCRIPT)
    result = run_nami(fake_openai, "run", "--dry-run", "do everything", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All done.\n"
    assert [name for name in CREATED if (project / name).exists()] == []
    lines = result.stderr.splitlines()
    shown = lines[lines.index("dry run: 7 calls, none executed:"):]
    marker = shown.index(f"  would run  make_marker: touch marker.txt (in {project})  [rule agent.yaml:8:5]")
    assert shown[marker + 1].strip().startswith("sandbox: ")  # what the call's process would run in
    tail = [line for line in shown if not line.strip().startswith("sandbox: ")]
    assert tail[1].startswith("  would ask  write_file: write_file path=\"written.txt\"")
    assert tail[1].endswith("[permissions.write]")
    assert tail[2] == f"  would run  make_marker: touch marker.txt (in {project})  [rule agent.yaml:8:5]"
    assert tail[6].startswith("  denied     bash: bash command=\"rm present.txt\"") and tail[6].endswith(": never")
    assert tail[7].startswith("  invalid    nope: Error: unknown tool 'nope'")


def test_nami_run_dry_run_json_ends_with_final(project: Path, fake_openai: FakeOpenAIServer) -> None:
    subprocess.run(["nami", "trust", "--yes"], cwd=project, check=True, capture_output=True)
    fake_openai.add(*SCRIPT)
    result = run_nami(fake_openai, "run", "--dry-run", "--json", "do everything", cwd=project)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events[-2:]] == ["dry_run", "final"]
    assert len(events[-2]["calls"]) == 7
    assert all(e["details"].get("dry_run") for e in events if e["type"] == "tool_result" and e["ok"])
    assert [name for name in CREATED if (project / name).exists()] == []


def test_nami_chat_dry_run(project: Path, fake_openai: FakeOpenAIServer) -> None:
    subprocess.run(["nami", "trust", "--yes"], cwd=project, check=True, capture_output=True)
    fake_openai.add(tool_calls(call("make_marker", {"name": "chat-marker"})), text("Made it."))
    result = subprocess.run([sys.executable, "-m", "nami_yaml", "chat", "--dry-run"], cwd=project, text=True,
                            capture_output=True, input="make a marker\n", timeout=60,
                            env={**os.environ, "NAMI_BASE_URL": fake_openai.base_url})
    assert result.returncode == 0, result.stderr
    assert "Made it." in result.stdout
    assert "dry run: 1 call, none executed:" in result.stderr
    assert not (project / "chat-marker").exists()


def test_a_pipeline_call_shows_each_stage(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    """Each stage's argv, as its approval question shows them; on the terminal, escaped on one line."""
    write(workdir / "tools" / "pick.yaml", PIPELINE_TOOL)
    write(workdir / "agent.yaml", "model: {provider: custom, name: fake-model}\ntools: {builtin: [], files: [tools/]}\n")
    subprocess.run(["nami", "trust", "--yes"], cwd=workdir, check=True, capture_output=True)
    fake_openai.add(tool_calls(call("pick", {"word": PIPELINE_WORD})), text("Picked."))
    result = run_nami(fake_openai, "run", "--dry-run", "--json", "pick", cwd=workdir)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    would = f"{PIPELINE_LINE} (in {workdir})"
    assert [e["content"] for e in events if e["type"] == "tool_result"] == [f"{NOT_EXECUTED}. It would run: {would}"]
    assert [c["command"] for c in events[-2]["calls"]] == [would]
    fake_openai.add(tool_calls(call("pick", {"word": PIPELINE_WORD})), text("Picked."))
    shown = run_nami(fake_openai, "run", "--dry-run", "pick", cwd=workdir).stderr
    assert f"  would run  pick: {PIPELINE_SHOWN} (in {workdir})" in shown.splitlines()
    assert "\x1b" not in shown
