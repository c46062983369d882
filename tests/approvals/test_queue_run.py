"""A run without a terminal keeps its question in the queue and waits; another process answers it."""

from __future__ import annotations

import json
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer
from tests.approvals.conftest import Run, approvals, audit_lines, start


def test_a_run_waits_until_another_process_approves(project: Path, fake_openai: FakeOpenAIServer,
                                                      runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs, answer="made it")
    assert not (project / "marker.txt").exists()  # waiting, not run

    listed = approvals(project, "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert entry["id"] == approval_id and entry["tool"] == "make_marker" and entry["target"] == "dev"
    assert entry["argv"] == ["touch", "marker.txt"] and entry["rule"] == "permissions.write"
    assert entry["approvals"] == []

    answered = approvals(project, "approve", approval_id, "--reason", "looks right")
    assert answered.returncode == 0, answered.stderr
    code, out, err = run.finish()
    assert code == 0, err
    assert out == "made it\n"
    assert (project / "marker.txt").exists()
    assert f"waiting for approval {approval_id}" in err and f"nami approvals approve {approval_id}" in err
    [line] = [entry for entry in audit_lines() if entry["tool"] == "make_marker"]
    assert line["status"] == "ran" and line["decided_by"] == f"approvals queue {approval_id}"
    assert line["asked_by"] == "permissions.write"
    assert str(line["reason"]).startswith("approved by ") and "(OS user, " in str(line["reason"])

    again = approvals(project, "approve", approval_id)
    assert again.returncode == 2 and "answered already (approved)" in again.stderr
    unknown = approvals(project, "approve", "0123456789ab")
    assert unknown.returncode == 2 and "no pending approval has the id" in unknown.stderr


def test_a_deny_reason_reaches_the_model(project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs, answer="understood")
    answered = approvals(project, "deny", approval_id, "--reason", "not during the freeze")
    assert answered.returncode == 0, answered.stderr
    code, out, err = run.finish()
    assert code == 0, err
    assert not (project / "marker.txt").exists()
    told = fake_openai.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "not during the freeze" in told["content"]
    withdrawn = approvals(project, "approve", approval_id)
    assert withdrawn.returncode == 2 and "answered already (denied)" in withdrawn.stderr
