"""Where nothing runs for real, nothing is queued ("would ask", and whom); the Python API waits on the
same queue as the CLI."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from nami_yaml import Agent
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.approvals.conftest import Run, agent_yaml, approvals, pending_ids, trust
from tests.helpers import run_nami, write


def test_a_dry_run_queues_nothing_and_says_who_would_be_asked(project: Path, fake_openai: FakeOpenAIServer,
                                                              runs: list[Run]) -> None:
    write(project / "agent.yaml", agent_yaml()
          .replace("prod: {env: {STAGE: prod}}", "prod: {env: {STAGE: prod}, approvals: {required: 2}}"))
    trust(project)
    fake_openai.add(tool_calls(call("make_marker", {"name": "marker.txt", "target": "prod"})), text("done"))
    run = Run(project, fake_openai, "make the marker", "--dry-run")
    runs.append(run)
    code, _, err = run.finish()
    assert code == 0, err
    assert pending_ids(project / "queue") == [] and not (project / "marker.txt").exists()
    [line] = [line for line in err.splitlines() if "make_marker" in line and "would ask" in line]
    assert line.endswith(f"(would ask the approvals queue in {project / 'queue'}, 2 different approvers)")


def test_the_python_api_waits_on_the_queue(project: Path) -> None:
    trust(project)
    model = ScriptedModel([tool_calls(call("make_marker", {"name": "marker.txt"})), text("made")])
    agent = Agent.from_config(project / "agent.yaml", client=model, cwd=project)
    outcome: list[object] = []
    running = threading.Thread(target=lambda: outcome.append(agent.run("make it")))
    running.start()
    try:
        deadline = time.monotonic() + 30
        while not pending_ids(project / "queue") and time.monotonic() < deadline:
            time.sleep(0.05)
        [approval_id] = pending_ids(project / "queue")
        answered = approvals(project, "approve", approval_id)  # another process, as a person would
        assert answered.returncode == 0, answered.stderr
    finally:
        running.join(60)
    assert (project / "marker.txt").exists()
    assert getattr(outcome[0], "final_text", None) == "made"


def test_policy_test_says_who_would_be_asked_and_queues_nothing(project: Path) -> None:
    write(project / "agent.yaml", agent_yaml()
          .replace("prod: {env: {STAGE: prod}}", "prod: {env: {STAGE: prod}, approvals: {required: 2}}")
          + "policy_tests:\n  - call: {tool: make_marker, args: {name: m, target: prod}}\n    expect: ask\n")
    tested = run_nami(None, "policy", "test", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert f"would ask the approvals queue in {project / 'queue'}, 2 different approvers" in tested.stdout
    assert not (project / "queue").exists()
