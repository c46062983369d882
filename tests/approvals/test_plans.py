"""Issue 43 item 4: a tool's plan step runs before the question, is shown in it, and the approval binds the plan:
the tool runs against exactly that plan file, and a plan changed after the yes refuses the call. Real runs over
the fake OpenAI server; the plan and the tool are real processes (the stub CLI of plan_tools.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.agent.events import Event, ToolResultEvent
from nami_yaml.approvals.plans import ShownPlan, shown_plan
from nami_yaml.cli.approve import approval_text
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.conftest import audit_lines
from tests.approvals.plan_tools import add_plan_tools, planner, planner_log, sha256_of  # noqa: F401 (a fixture)
from tests.helpers import Answering, write

pytestmark = pytest.mark.usefixtures("planner")  # the stub CLI first on PATH

AGENT = "model: {provider: custom, name: fake-model}\ntools: {builtin: [], files: [tools/]}\n"


def run_once(project: Path, server: FakeOpenAIServer, tool: str, arguments: dict[str, object],
             approve: object = None, **options: object) -> tuple[str, list[Event]]:
    """One call of ``tool`` by the model; what the model was told of it, and the events."""
    server.add(tool_calls(call(tool, arguments)), text("done"))
    events: list[Event] = []
    with Agent.from_config(project / "agent.yaml", base_url=server.base_url, model="fake-model", trust=True,
                           cwd=project, approve=approve, on_event=events.append, **options) as agent:
        agent.run("go")
    [result] = [event for event in events if isinstance(event, ToolResultEvent)]
    return result.content, events


def project_with_plans(workdir: Path, more: str = "") -> Path:
    write(workdir / "agent.yaml", AGENT + more)
    add_plan_tools(workdir)
    return workdir


def test_the_question_shows_the_plan_and_the_yes_runs_exactly_that_plan_file(
        workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    project = project_with_plans(workdir)
    seen: dict[str, object] = {}

    def approve(request: ApprovalRequest) -> bool:
        planned = shown_plan(request.call)
        assert planned is not None
        step = request.call.plan_step  # type: ignore[attr-defined]
        seen.update(text=planned.text, question=approval_text(request.call), sha256=planned.sha256,
                    file_sha256=sha256_of(step.file), plan=step.file.read_text())
        return True

    told, _ = run_once(project, fake_openai, "deploy", {"size": 3}, approve)
    assert seen["text"] == "PLAN: create web (size 3)\n"  # the show step's output is what is asked about
    question = str(seen["question"])
    assert "its plan (planner plan --size=3 --out=" in question and "| PLAN: create web (size 3)" in question
    assert f"binds this plan: sha256 {seen['file_sha256']}" in question
    assert seen["sha256"] == seen["file_sha256"]
    # The tool ran against that very file; the plan, show and apply are the three processes, in that order.
    assert (project / "applied.txt").read_text() == seen["plan"] == "create web (size 3)\n"
    commands = [argv[0] for argv in planner_log(project)]
    assert commands == ["plan", "show", "apply"]
    [plan_argv, show_argv, apply_argv] = planner_log(project)
    # The show step and the tool read the sealed copy of the plan file (/dev/fd/N), never its path.
    assert show_argv[1].startswith("/dev/fd/") and apply_argv[1].startswith("/dev/fd/")
    assert not Path(plan_argv[2].removeprefix("--out=")).parent.exists()  # the call's plan folder is gone
    [line] = [entry for entry in audit_lines() if entry["tool"] == "deploy"]
    assert line["plan_sha256"] == seen["sha256"] and line["status"] == "ran", line
    assert "Error" not in told


def test_a_plan_file_changed_after_the_approval_refuses_the_call(
        workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    project = project_with_plans(workdir)

    def approve_then_tamper(request: ApprovalRequest) -> bool:
        plan_file = request.call.plan_step.file  # type: ignore[attr-defined]
        plan_file.chmod(0o600)
        plan_file.write_text("destroy everything\n")  # after the yes: what the person saw is not what would run
        return True

    told, _ = run_once(project, fake_openai, "deploy", {"size": 3}, approve_then_tamper)
    assert "the plan changed" in told and "so the tool was not run" in told, told
    assert not (project / "applied.txt").exists()
    assert [argv[0] for argv in planner_log(project)] == ["plan", "show"]


def test_a_failed_plan_step_is_a_result_naming_its_stderr_and_nobody_is_asked(
        workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    project = project_with_plans(workdir)
    approver = Answering(True)
    told, _ = run_once(project, fake_openai, "deploy", {"size": -1}, approver)
    assert approver.asked == []
    assert "the plan step (planner plan --size=-1" in told and "exited with 3" in told, told
    assert "error: size must be positive, got -1" in told
    assert not (project / "applied.txt").exists()
    assert [argv[0] for argv in planner_log(project)] == ["plan"]
    [line] = [entry for entry in audit_lines() if entry["tool"] == "deploy"]
    assert line["status"] == "denied" and line["decided_by"] == "plan step"


def test_a_plan_without_a_file_binds_the_diff_shown(workdir: Path,
                                                    fake_openai: FakeOpenAIServer) -> None:
    """kubectl diff before kubectl apply: exit 1 (differences) is a plan; the yes binds the diff's hash."""
    import hashlib

    project = project_with_plans(workdir)
    shown: list[ShownPlan | None] = []

    def approve(request: ApprovalRequest) -> bool:
        shown.append(shown_plan(request.call))
        return True

    told, _ = run_once(project, fake_openai, "scale", {"replicas": 4}, approve)
    [planned] = shown
    assert planned is not None and planned.text == "+ replicas: 4\n"
    assert planned.sha256 == hashlib.sha256(b"+ replicas: 4\n").hexdigest()
    assert (project / "applied.txt").read_text() == "replicas 4\n", told
    assert [line["plan_sha256"] for line in audit_lines() if line["tool"] == "scale"] == [planned.sha256]


def test_a_call_no_one_is_asked_about_runs_only_the_plan_its_command_needs(
        workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    """Allowed by a rule: a plan only for showing (a diff) is not run; a plan whose file the tool applies
    runs, unshown (no show step), just before the tool."""
    project = project_with_plans(workdir, "rules:\n  - {tool: [deploy, scale], decision: allow}\n")
    approver = Answering(True)
    run_once(project, fake_openai, "scale", {"replicas": 2}, approver)
    assert [argv[0] for argv in planner_log(project)] == ["set"]
    (project / "planner.log").unlink()
    run_once(project, fake_openai, "deploy", {"size": 5}, approver)
    assert [argv[0] for argv in planner_log(project)] == ["plan", "apply"]
    assert (project / "applied.txt").read_text() == "create web (size 5)\n"
    assert approver.asked == []


def test_yes_for_the_session_holds_for_the_same_diff_only(workdir: Path,
                                                          fake_openai: FakeOpenAIServer) -> None:
    from nami_yaml.agent.hooks import Decision

    project = project_with_plans(workdir)
    asked: list[ApprovalRequest] = []

    def always(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return request.approve_for_session()

    fake_openai.add(tool_calls(call("scale", {"replicas": 4})), tool_calls(call("scale", {"replicas": 4})),
                    text("done"))
    with Agent.from_config(project / "agent.yaml", base_url=fake_openai.base_url, model="fake-model", trust=True,
                           cwd=project, approve=always) as agent:
        agent.run("go")
        assert len(asked) == 1  # the same diff again: the session's yes holds
        (project / "planner.log").unlink()
        fake_openai.add(tool_calls(call("scale", {"replicas": 4})), text("done"))
        # The cluster (here: the stub) now says another diff for the same call: asked again.
        planner = Path(str(shutil.which("planner")))
        planner.write_text(planner.read_text().replace('"+ replicas: %s\\n"', '"+ replicas: %s (and more)\\n"'))
        agent.run("again")
    assert len(asked) == 2
