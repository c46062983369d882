"""How a wait ends without an answer: the timeout and Ctrl-C are a no told to the model; a run that ended
withdraws its question. What the queue shows is redacted as the audit log is."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.conftest import Run, agent_yaml, approvals, start, trust, wait_for_pending
from tests.helpers import write


def told(server: FakeOpenAIServer) -> str:
    return str(server.requests[-1]["messages"][-1]["content"])


def test_the_timeout_is_a_no_told_to_the_model(project: Path, fake_openai: FakeOpenAIServer,
                                               runs: list[Run]) -> None:
    write(project / "agent.yaml", agent_yaml().replace("timeout: 60", "timeout: 1"))
    trust(project)
    fake_openai.add(tool_calls(call("make_marker", {"name": "marker.txt"})), text("gave up"))
    run = Run(project, fake_openai, "make the marker")
    runs.append(run)
    code, _, err = run.finish()
    assert code == 0, err
    assert not (project / "marker.txt").exists()
    assert "nobody approved it within approvals.timeout (1s" in told(fake_openai)
    [entry] = json.loads(approvals(project, "--all", "--json").stdout)
    assert entry["state"] == "timed out"


def test_ctrl_c_while_it_waits_is_a_no_told_to_the_model(project: Path, fake_openai: FakeOpenAIServer,
                                                         runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs, answer="stopped")
    run.process.send_signal(signal.SIGINT)
    code, out, err = run.finish()
    assert code == 0, err
    assert out == "stopped\n" and not (project / "marker.txt").exists()
    assert "was interrupted (Ctrl-C)" in told(fake_openai)
    late = approvals(project, "approve", approval_id)
    assert late.returncode == 2 and f"approval {approval_id} was withdrawn" in late.stderr


def test_the_question_of_a_run_that_ended_is_withdrawn(project: Path, fake_openai: FakeOpenAIServer,
                                                       runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs, answer="never")
    run.kill()  # SIGKILL: nothing could mark it; its process is gone
    late = approvals(project, "approve", approval_id)
    assert late.returncode == 2 and "withdrawn: the run that asked has ended" in late.stderr
    assert approvals(project, "--json").stdout.strip() == "[]"


def test_what_the_queue_shows_is_redacted(project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    write(project / "tools" / "login.yaml", "name: login\ndescription: Log in.\nrisk: write\n"
          "parameters: {type: object, properties: {password: {type: string}}, required: [password]}\n"
          "command: [echo, \"{password}\"]\n")
    trust(project)
    fake_openai.add(tool_calls(call("login", {"password": "s3cr3t-hunter2-value"})), text("done"))
    run = Run(project, fake_openai, "log in")
    runs.append(run)
    [approval_id] = wait_for_pending(project / "queue", run)
    shown = approvals(project, "show", approval_id, "--json").stdout + approvals(project).stdout
    stored = (project / "queue" / f"{approval_id}.json").read_text()
    assert "s3cr3t-hunter2-value" not in shown + stored
    assert "[redacted]" in stored and "[redacted]" in shown
    assert approvals(project, "deny", approval_id, "--reason", "no").returncode == 0
