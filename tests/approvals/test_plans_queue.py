"""Issue 43 "Done when": a changed plan file after the approval refuses the call. A real ``nami run`` without
a terminal waits on the queue with the plan in the pending entry; ``nami approvals approve`` from another
process lets it run against exactly that plan, or refuses it where the plan file changed meanwhile. Dry runs
and policy tests say "would run plan" and run nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.approvals.notify import payload
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, trust, wait_for_pending
from tests.approvals.plan_tools import add_plan_tools, planner, planner_log, sha256_of  # noqa: F401 (a fixture)
from tests.helpers import run_nami

pytestmark = pytest.mark.usefixtures("planner")  # the stub CLI first on PATH


def told(server: FakeOpenAIServer) -> str:
    message = server.requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    return str(message["content"])


def waiting_deploy(project: Path, server: FakeOpenAIServer, runs: list[Run]) -> tuple[Run, dict[str, object]]:
    add_plan_tools(project)
    trust(project)
    server.add(tool_calls(call("deploy", {"size": 3})), text("done"))
    run = Run(project, server, "deploy it")
    runs.append(run)
    [approval_id] = wait_for_pending(project / "queue", run)
    entry = json.loads((project / "queue" / f"{approval_id}.json").read_text())
    return run, entry


def plan_file_of(entry: dict[str, object]) -> Path:
    argv = entry["argv"]
    assert isinstance(argv, list) and argv[:2] == ["planner", "apply"]
    return Path(argv[2])


def test_the_pending_approval_carries_the_plan_and_the_approval_runs_exactly_it(
        project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    run, entry = waiting_deploy(project, fake_openai, runs)
    plan_file = plan_file_of(entry)
    assert entry["plan"] == "PLAN: create web (size 3)\n"
    assert entry["plan_sha256"] == sha256_of(plan_file)
    assert "Its plan (planner plan --size=3" in str(entry["text"])
    assert payload(entry)["plan"] == entry["plan"]  # what a webhook is sent
    shown = json.loads(approvals(project, "show", str(entry["id"]), "--json").stdout)
    assert shown["plan"] == entry["plan"] and shown["plan_sha256"] == entry["plan_sha256"]
    read = approvals(project, "show", str(entry["id"])).stdout  # what a person reads before answering
    assert f"  plan (sha256 {entry['plan_sha256']}):\n  | PLAN: create web (size 3)\n" in read, read
    assert "  plan: 1 line, sha256 " in approvals(project).stdout
    answered = approvals(project, "approve", str(entry["id"]))
    assert answered.returncode == 0, answered.stderr
    code, _, err = run.finish()
    assert code == 0, err
    assert (project / "applied.txt").read_text() == "create web (size 3)\n"
    [line] = [line for line in audit_lines() if line["tool"] == "deploy"]
    assert line["plan_sha256"] == entry["plan_sha256"] and line["status"] == "ran"


def test_a_plan_file_changed_before_the_answer_counts_refuses_the_call(
        project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    run, entry = waiting_deploy(project, fake_openai, runs)
    plan_file = plan_file_of(entry)
    plan_file.chmod(0o600)
    plan_file.write_text("destroy everything\n")  # the approver approves what the entry shows: another plan
    answered = approvals(project, "approve", str(entry["id"]))
    assert answered.returncode == 0, answered.stderr
    code, _, err = run.finish()
    assert code == 0, err
    assert not (project / "applied.txt").exists()
    assert "the plan changed since it was asked" in told(fake_openai)
    assert [argv[0] for argv in planner_log(project)] == ["plan", "show"]


def test_a_dry_run_says_it_would_run_the_plan_and_runs_nothing(project: Path, fake_openai: FakeOpenAIServer,
                                                                runs: list[Run]) -> None:
    add_plan_tools(project)
    trust(project)
    fake_openai.add(tool_calls(call("deploy", {"size": 3})), text("done"))
    run = Run(project, fake_openai, "deploy it", "--dry-run")
    runs.append(run)
    code, _, err = run.finish()
    assert code == 0, err
    assert "would run plan planner plan --size=3 --out=" in err and ", then planner show " in err, err
    assert "would run plan planner plan --size=3" in told(fake_openai)
    assert planner_log(project) == [] and not (project / "queue").exists()


def test_policy_test_says_it_would_run_the_plan_and_runs_nothing(project: Path) -> None:
    add_plan_tools(project)
    (project / "agent.yaml").write_text(agent_yaml() + "policy_tests:\n  - call: {tool: deploy, args: {size: 1}}\n"
                                        "    expect: ask\n")
    tested = run_nami(None, "policy", "test", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "would run plan planner plan --size=1" in tested.stdout, tested.stdout
    assert planner_log(project) == [] and not (project / "queue").exists()


APPLY_FILE = """\
name: apply_file
description: Apply a manifest file.
risk: write
parameters: {type: object, properties: {path: {type: string}}, required: [path]}
plan: {command: [cat, "{path}"]}
command: [cp, "{path}", applied.txt]
"""


def test_a_diff_plan_binds_the_files_it_showed(project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    # A plan without a file (kubectl diff -f m.yaml) shows what the manifests would change: a manifest edited
    # while the question waits is not what the person approved (red team: "replicas: 3" shown, "0" applied).
    (project / "tools" / "apply_file.yaml").write_text(APPLY_FILE)
    (project / "m.yaml").write_text("replicas: 3\n")
    trust(project)
    fake_openai.add(tool_calls(call("apply_file", {"path": "m.yaml"})), text("done"))
    run = Run(project, fake_openai, "apply it")
    runs.append(run)
    [approval_id] = wait_for_pending(project / "queue", run)
    assert json.loads((project / "queue" / f"{approval_id}.json").read_text())["plan"] == "replicas: 3\n"
    (project / "m.yaml").write_text("replicas: 0  # and delete prod\n")
    approvals(project, "approve", approval_id)
    run.finish()
    assert not (project / "applied.txt").exists()
    result = next(m["content"] for m in fake_openai.requests[-1]["messages"] if m["role"] == "tool")
    assert "plan changed" in result
