"""A plan step that would run without a sandbox (``sandbox: {mode: off}``, or no bubblewrap) runs nothing before a
person approved running it: ``terraform plan`` runs the providers and ``data "external"`` programs of a folder the
model chose. It is asked about first (a question of its own, naming the plan step's command, through the same
approver: the terminal, the queue and its page), then the plan is shown and the tool asked about as before; a no
is absolute; where nobody can answer the call is refused saying why and how. Real runs over the fake OpenAI
server; the plan step and the tool are real processes (the stub CLI of plan_tools.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.agent.events import Event, ToolResultEvent
from nami_yaml.approvals.plans import ShownPlan, shown_plan
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, trust, wait_for_pending
from tests.approvals.plan_tools import add_plan_tools, planner, planner_log  # noqa: F401 (a fixture)
from tests.approvals.test_plans_queue import told, waiting_deploy
from tests.helpers import Answering, write

pytestmark = pytest.mark.usefixtures("planner")  # the stub CLI first on PATH

PLAN_STEP_RULE = "plan step without a sandbox"  # who asks (approvals/plans.py), as the question says it
UNSANDBOXED = ("model: {provider: custom, name: fake-model}\ntools: {builtin: [], files: [tools/]}\n"
               "sandbox: {mode: 'off'}\n")


def run_once(project: Path, server: FakeOpenAIServer, approve: object, **options: object) -> str:
    """One call of deploy by the model; what the model was told of it."""
    server.add(tool_calls(call("deploy", {"size": 3})), text("done"))
    events: list[Event] = []
    with Agent.from_config(project / "agent.yaml", base_url=server.base_url, model="fake-model", trust=True,
                           cwd=project, approve=approve, on_event=events.append, **options) as agent:
        agent.run("go")
    [result] = [event for event in events if isinstance(event, ToolResultEvent)]
    return result.content


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "agent.yaml", UNSANDBOXED)
    add_plan_tools(workdir)
    return workdir


def test_the_plan_step_is_asked_about_before_it_runs_then_the_tool_with_its_plan(
        project: Path, fake_openai: FakeOpenAIServer) -> None:
    asked: list[tuple[ApprovalRequest, list[list[str]]]] = []
    plans: list[ShownPlan | None] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append((request, planner_log(project)))  # what had run when the question was asked
        plans.append(shown_plan(request.call))
        return True

    told = run_once(project, fake_openai, approve)
    [(first, ran_before_first), (second, ran_before_second)] = asked
    assert ran_before_first == []  # nothing of the plan step ran before a person said yes to it
    assert first.pending.source == PLAN_STEP_RULE and "runs without a sandbox" in str(first.pending.reason)
    assert first.call.describe().startswith("planner plan --size=3 --out=")  # its own command is what is asked
    assert ", then planner show " in first.call.describe()
    assert first.call.plan()["argv"][:3] == ["planner", "plan", "--size=3"]
    # Then the question about the tool itself, showing the plan (which ran once approved).
    assert [argv[0] for argv in ran_before_second] == ["plan", "show"]
    [unplanned, planned] = plans
    assert unplanned is None and planned is not None and planned.text == "PLAN: create web (size 3)\n"
    assert second.call.plan()["argv"][:2] == ["planner", "apply"]
    assert (project / "applied.txt").read_text() == "create web (size 3)\n", told
    [line] = [entry for entry in audit_lines() if entry["tool"] == "deploy"]
    assert line["status"] == "ran" and line["plan"]["plan_step"]["approved"] == "user", line


def test_a_no_to_the_plan_step_runs_nothing_and_the_model_is_told(project: Path,
                                                                  fake_openai: FakeOpenAIServer) -> None:
    approver = Answering(False)
    told = run_once(project, fake_openai, approver)
    assert len(approver.asked) == 1 and approver.asked[0].pending.source == PLAN_STEP_RULE
    assert planner_log(project) == [] and not (project / "applied.txt").exists()
    assert "would run without a sandbox" in told and "was not approved" in told, told
    [line] = [entry for entry in audit_lines() if entry["tool"] == "deploy"]
    assert line["status"] == "denied"


def test_where_nobody_can_be_asked_the_plan_step_does_not_run_and_the_refusal_says_how(
        project: Path, fake_openai: FakeOpenAIServer) -> None:
    told = run_once(project, fake_openai, None)  # the Python API without approve= and without a queue
    assert planner_log(project) == [] and not (project / "applied.txt").exists()
    assert "its plan step (planner plan --size=3" in told and "would run without a sandbox" in told, told
    assert "Install bubblewrap" in told and "approvals.via: queue" in told


def test_yes_answers_the_plan_step_as_any_question(project: Path, fake_openai: FakeOpenAIServer) -> None:
    run_once(project, fake_openai, None, assume_yes=True)
    assert [argv[0] for argv in planner_log(project)] == ["plan", "apply"]
    assert (project / "applied.txt").read_text() == "create web (size 3)\n"


def test_a_run_without_a_terminal_refuses_before_planning(project: Path, fake_openai: FakeOpenAIServer) -> None:
    trust(project)
    fake_openai.add(tool_calls(call("deploy", {"size": 3})), text("done"))
    run = Run(project, fake_openai, "deploy it")
    code, _, err = run.finish()
    assert code == 0, err
    assert planner_log(project) == [] and not (project / "applied.txt").exists()
    said = told(fake_openai)
    assert "there is no terminal to ask on" in said and "runs without a sandbox" in said, said
    assert "bubblewrap" in said


def test_the_queue_asks_the_plan_step_first_then_the_tool(workdir: Path, fake_openai: FakeOpenAIServer,
                                                          runs: list[Run]) -> None:
    """A real ``nami run`` without a terminal, ``approvals.via: queue``: two pending approvals one after the
    other, each answered by ``nami approvals approve`` from another process."""
    write(workdir / "agent.yaml", agent_yaml() + "sandbox: {mode: 'off'}\n")
    run, entry = waiting_deploy(workdir, fake_openai, runs)
    first = str(entry["id"])
    assert entry["rule"] == PLAN_STEP_RULE and entry["argv"][:3] == ["planner", "plan", "--size=3"], entry
    assert entry["plan"] is None and planner_log(workdir) == []
    listed = approvals(workdir).stdout
    assert "asked by plan step without a sandbox" in listed and '["planner", "plan", "--size=3"' in listed, listed
    assert approvals(workdir, "approve", first).returncode == 0
    queue = workdir / "queue"
    second = _next_pending(queue, run, first)
    entry = json.loads((queue / f"{second}.json").read_text())
    assert entry["argv"][:2] == ["planner", "apply"] and entry["plan"] == "PLAN: create web (size 3)\n", entry
    assert approvals(workdir, "approve", second).returncode == 0
    code, _, err = run.finish()
    assert code == 0, err
    assert (workdir / "applied.txt").read_text() == "create web (size 3)\n"


def test_a_deny_of_the_plan_step_from_the_queue_is_absolute(workdir: Path, fake_openai: FakeOpenAIServer,
                                                            runs: list[Run]) -> None:
    write(workdir / "agent.yaml", agent_yaml() + "sandbox: {mode: 'off'}\n")
    run, entry = waiting_deploy(workdir, fake_openai, runs)
    assert approvals(workdir, "deny", str(entry["id"]), "--reason", "not from that folder").returncode == 0
    code, _, err = run.finish()
    assert code == 0, err
    assert planner_log(workdir) == [] and not (workdir / "applied.txt").exists()
    assert "not from that folder" in told(fake_openai)


def _next_pending(queue: Path, run: Run, answered: str) -> str:
    """The pending approval after ``answered`` (a wait for a state: the run asks its next question)."""
    import time

    for _ in range(1200):
        found = [item for item in wait_for_pending(queue, run) if item != answered]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no second pending approval appeared")


def test_on_a_terminal_the_plan_step_is_asked_about_first(project: Path, fake_openai: FakeOpenAIServer) -> None:
    """A person at a real terminal (a pty) sees the plan step's command and is asked; only after the yes it runs,
    and the question about the tool shows its plan."""
    from tests.cli.terminal import Terminal

    trust(project)
    fake_openai.add(tool_calls(call("deploy", {"size": 3})), text("done"))
    terminal = Terminal(fake_openai, ["run", "deploy it"], cwd=project)
    first = terminal.expect(r"Run it\?")
    assert "planner plan --size=3 --out=" in first and "asked by plan step without a sandbox" in first, first
    assert planner_log(project) == []
    terminal.send("y")
    second = terminal.expect(r"Run it\?")
    assert "| PLAN: create web (size 3)" in second[len(first):], second
    terminal.send("y")
    assert terminal.finish() == 0, terminal.raw
    assert (project / "applied.txt").read_text() == "create web (size 3)\n"
