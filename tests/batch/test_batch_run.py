"""`nami batch run` against the fake server, each task scripted by a marker in its prompt: the results
do not depend on the number of workers, and a hung, frozen or crashing task is reported while the rest
of the batch goes on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nami_yaml.batch import isolate
from nami_yaml.batch.results import read_results
from nami_yaml.cli.main import cli
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.batch.conftest import BatchProject, comparable
from tests.sandboxing import gone, need_bwrap


def mixed_tasks(project: BatchProject, runs: int) -> list[dict[str, Any]]:
    """A task of each kind (an answer, a tool call, a failing check, a step limit): its script ``runs`` times.
    One of each is enough: every task runs in a worker process of its own, whatever their number."""
    tasks = []
    for n in range(4):
        marker = f"[t{n:02d}]"
        task: dict[str, Any] = {"id": f"t{n:02d}", "prompt": f"{marker} task number {n}"}
        if n == 0:
            script = [text(f"the answer is {n}")]
            task["checks"] = [{"answer_matches": rf"\b{n}\b"}]
        elif n == 1:
            script = [tool_calls(call("write_file", {"path": "out.txt", "content": f"value {n}"})), text("written")]
            task["checks"] = [{"file_contains": {"path": "out.txt", "text": f"value {n}"}}, {"called": "write_file"}]
        elif n == 2:
            script = [text("no idea")]
            task["checks"] = [{"answer_matches": "yes"}]  # fails, always for the same reason
        else:
            script = [tool_calls(call("list_dir", {})), tool_calls(call("list_dir", {}))]
            task["limits"] = {"max_steps": 2}
        for _ in range(runs):
            project.server.add_task(marker, *script)
        tasks.append(task)
    return tasks


def test_tasks_with_three_workers_give_the_results_of_one(batch_project: BatchProject) -> None:
    tasks_file = batch_project.tasks(mixed_tasks(batch_project, runs=2))
    one, one_rows = batch_project.run(str(tasks_file), "--workers", "1", "--approve", "write",
                                      "-o", str(batch_project.folder / "one.jsonl"))
    three, three_rows = batch_project.run(str(tasks_file), "--workers", "3", "--approve", "write",
                                          "-o", str(batch_project.folder / "three.jsonl"))
    assert one.exit_code == three.exit_code == 1  # t02 fails its check, and t03 its max_steps
    assert len(one_rows) == len(three_rows) == 4
    assert comparable(one_rows) == comparable(three_rows)
    by_id = {r["id"]: r for r in three_rows}
    assert by_id["t00"]["passed"] and by_id["t01"]["passed"]
    assert by_id["t02"]["checks"][0]["reason"] == "the answer does not match /yes/: 'no idea'"
    assert by_id["t03"]["status"] == "max_steps" and not by_id["t03"]["passed"]
    assert sum(r["passed"] for r in three_rows) == 2
    assert len({r["session"] for r in three_rows}) == 4  # every task recorded its own session
    assert batch_project.server.remaining == 0
    assert "passed    2 of 4 (50.0%)" in three.output


def test_results_lines_have_every_field_and_a_clean_batch_exits_0(batch_project: BatchProject) -> None:
    batch_project.server.add_task("[a]", text("fine"))
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go"}])  # no checks: answering passes
    result, rows = batch_project.run(str(tasks_file))
    assert result.exit_code == 0, result.output
    (row,) = rows
    assert set(row) >= {"id", "status", "passed", "checks", "answer", "steps", "usage", "cost", "duration_s",
                        "session", "error"}
    assert row["status"] == "answered" and row["passed"] is True and row["answer"] == "fine"
    assert row["steps"] == 1 and row["usage"]["prompt_tokens"] > 0 and row["duration_s"] > 0
    sessions = Path(os.environ["XDG_DATA_HOME"]) / "nami" / "sessions"
    assert (sessions / f"{row['session']}.jsonl").is_file()
    assert "tasks     1" in result.output and "p50" in result.output and "p95" in result.output


def test_a_hung_task_hits_its_wall_time_and_its_tools_die_while_the_rest_finish(
        batch_project: BatchProject, tmp_path: Path) -> None:
    marker = f"300.{os.getpid() % 1000:03d}7"  # its sleep is found by its argument (pids are the sandbox's own)
    batch_project.server.add_task("[hang]", tool_calls(call("bash", {"command": f"touch started; sleep {marker}"})))
    for name in ("a", "b", "c"):
        batch_project.server.add_task(f"[{name}]", text("done"))
    # The wall time counts from the worker's start (its imports done): room to reach the tool on a loaded
    # machine, which the kept workspace's `started` shows it did; then it hangs until its wall time.
    tasks = [{"id": "hang", "prompt": "[hang] wait", "limits": {"wall_time": 6}},
             *({"id": name, "prompt": f"[{name}] go"} for name in ("a", "b", "c"))]
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--workers", "2", "--approve", "exec",
                                     "--keep-workspaces")
    by_id = {r["id"]: r for r in rows}
    started = (Path(by_id["hang"]["workspace"]) / "started").exists()
    for row in rows:  # kept in the system's temporary folder
        shutil.rmtree(row["workspace"])
    assert started  # the tool was running when the time ran out
    assert by_id["hang"]["status"] == "timeout" and not by_id["hang"]["passed"]
    assert "wall time of 6 s" in by_id["hang"]["error"]
    assert by_id["hang"]["session"]  # the session up to the timeout is kept
    assert all(by_id[name]["passed"] for name in ("a", "b", "c"))
    assert result.exit_code == 1
    assert gone(f"sleep {marker}")


CRASHING_TOOLS = """\
name: die
description: Kills its own process.
risk: read
entrypoint: batch_crash_tools:die
"""
CRASHING_MODULE = """\
import os, signal

def die() -> str:
    os.kill(os.getpid(), signal.SIGKILL)
    return "never"
"""


@pytest.fixture
def no_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bwrap on the workers' PATH (only bash): their tools run as they are, and so can reach the worker.
    Sandboxed, nothing a tool does can (see the last test of these)."""
    folder = tmp_path / "bin-without-bwrap"
    folder.mkdir()
    (folder / "bash").symlink_to(os.path.realpath("/bin/bash"))
    monkeypatch.setenv("PATH", str(folder))


def test_a_crashing_task_is_reported_and_the_batch_goes_on(batch_project: BatchProject, no_sandbox: None) -> None:
    batch_project.server.add_task("[crash]", tool_calls(call("bash", {"command": "kill -KILL $PPID"})))
    batch_project.server.add_task("[fine]", text("ok"))
    tasks = [{"id": "crash", "prompt": "[crash] go"}, {"id": "fine", "prompt": "[fine] go"}]
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--approve", "exec")
    by_id = {r["id"]: r for r in rows}
    assert by_id["crash"]["status"] == "crashed", by_id["crash"]["error"]
    assert "killed by SIGKILL" in by_id["crash"]["error"]
    assert by_id["crash"]["session"]  # told before the crash: the session file shows how far it got
    assert by_id["fine"]["passed"]
    assert result.exit_code == 1


def test_a_frozen_worker_is_killed_after_its_wall_time(batch_project: BatchProject, no_sandbox: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolate, "KILL_GRACE", 1.0)
    batch_project.server.add_task("[freeze]", tool_calls(call("bash", {"command": "kill -STOP $PPID"})))
    # Room for the worker to start and reach the tool on a loaded machine; then it freezes and is killed.
    tasks = [{"id": "freeze", "prompt": "[freeze] go", "limits": {"wall_time": 8}}]
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--approve", "exec")
    (row,) = rows
    assert row["status"] == "timeout"
    assert "its processes were killed" in row["error"]


def test_sandboxed_a_crashing_tool_ends_only_its_own_process(batch_project: BatchProject) -> None:
    need_bwrap()
    (batch_project.folder / "crash.yaml").write_text(CRASHING_TOOLS)
    (batch_project.folder / "batch_crash_tools.py").write_text(CRASHING_MODULE)
    batch_project.server.add_task("[crash]", tool_calls(call("die", {})), text("went on"))
    tasks = [{"id": "crash", "prompt": "[crash] go"}]
    _, rows = batch_project.run(str(batch_project.tasks(tasks)), "-t", str(batch_project.folder / "crash.yaml"),
                                "--approve", "read")
    (row,) = rows
    assert (row["status"], row["answer"]) == ("answered", "went on"), row["error"]


def test_resume_runs_only_the_tasks_without_a_result(batch_project: BatchProject) -> None:
    for name in ("a", "b", "c"):
        batch_project.server.add_task(f"[{name}]", text(f"answer {name}"))
    tasks_file = batch_project.tasks([{"id": n, "prompt": f"[{n}] go"} for n in ("a", "b", "c")])
    output = batch_project.folder / "results.jsonl"
    earlier = {"id": "b", "status": "answered", "passed": True, "checks": [], "answer": "from before", "steps": 1,
               "usage": None, "cost": None, "duration_s": 1.0, "session": None, "error": None}
    # The earlier run was cut off while writing its next line.
    output.write_text(json.dumps(earlier) + "\n" + '{"id": "c", "status": "ans')
    refused, _ = batch_project.run(str(tasks_file))
    assert refused.exit_code == 2 and "--resume" in refused.output
    assert output.read_text().endswith('"status": "ans')  # left as it was
    result, rows = batch_project.run(str(tasks_file), "--resume")
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in rows][0] == "b" and sorted(r["id"] for r in rows) == ["a", "b", "c"]
    assert {r["id"]: r["answer"] for r in rows} == {"a": "answer a", "b": "from before", "c": "answer c"}
    asked = {r["messages"][1]["content"] for r in batch_project.server.requests}
    assert asked == {"[a] go", "[c] go"}  # b was not run again


def test_asks_are_refused_unless_approved_and_every_call_is_audited(batch_project: BatchProject) -> None:
    for run in ("no", "yes"):
        batch_project.server.add_task(f"[{run}]", tool_calls(call("write_file", {"path": "f.txt", "content": "x"})),
                                      text("finished"))
    check = [{"file_exists": "f.txt"}]
    tasks_file = batch_project.tasks([{"id": "no", "prompt": "[no] write", "checks": check}])
    refused, (row,) = batch_project.run(str(tasks_file))
    assert not row["passed"] and row["checks"][0]["reason"] == "f.txt does not exist"
    approved_file = batch_project.tasks([{"id": "yes", "prompt": "[yes] write", "checks": check}], "approved.yaml")
    approved, (approved_row,) = batch_project.run(str(approved_file), "--approve", "write",
                                                  "-o", str(batch_project.folder / "approved.jsonl"))
    assert approved_row["passed"], approved_row
    denied_result = batch_project.server.requests[1]["messages"][-1]["content"]
    assert denied_result.startswith("Denied")
    audit = Path(os.environ["XDG_STATE_HOME"]) / "nami" / "audit.jsonl"
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert {(e["session"], e["status"], e["via"]) for e in lines} == {
        (row["session"], "denied", "batch"), (approved_row["session"], "ran", "batch")}


def test_a_write_that_runs_code_needs_exec_approval_in_a_batch_too(batch_project: BatchProject) -> None:
    (batch_project.folder / ".git" / "hooks").mkdir(parents=True)
    hook = call("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})
    for run in ("write", "exec"):
        batch_project.server.add_task(f"[{run}]", tool_calls(hook), text("finished"))
    check = [{"file_exists": ".git/hooks/pre-commit"}]
    tasks = batch_project.tasks([{"id": "write", "prompt": "[write] hook", "checks": check}])
    _, (row,) = batch_project.run(str(tasks), "--approve", "write")
    assert not row["passed"] and row["checks"][0]["reason"] == ".git/hooks/pre-commit does not exist"
    refusal = batch_project.server.requests[1]["messages"][-1]["content"]
    assert refusal.startswith("Denied") and "permissions.exec" in refusal
    tasks = batch_project.tasks([{"id": "exec", "prompt": "[exec] hook", "checks": check}], "exec.yaml")
    _, (row,) = batch_project.run(str(tasks), "--approve", "exec", "-o", str(batch_project.folder / "exec.jsonl"))
    assert row["passed"], row


def test_setup_commands_run_in_the_fresh_workspace_and_a_failing_one_fails_the_task(
        batch_project: BatchProject) -> None:
    (batch_project.folder / "fixture").mkdir()
    (batch_project.folder / "fixture" / "input.txt").write_text("original\n")
    batch_project.server.add_task("[edit]", tool_calls(call("write_file", {"path": "input.txt", "content": "changed"})),
                                  text("edited"))
    batch_project.server.add_task("[check]", text("looked"))
    tasks = [
        {"id": "edit", "prompt": "[edit] go", "workspace": "fixture", "setup": ["test -f input.txt", ["touch", "made"]],
         "env": {"GREETING": "hi"},
         "checks": [{"command": "test -f made && grep -q changed input.txt && test \"$GREETING\" = hi"}]},
        # Sees the fixture as it was: the other task's write went to its own copy.
        {"id": "check", "prompt": "[check] go", "workspace": {"path": "fixture"},
         "checks": [{"file_contains": {"path": "input.txt", "text": "original"}}]},
        {"id": "broken", "prompt": "[never] go", "setup": ["echo preparing; exit 3"]},
    ]
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--approve", "write")
    by_id = {r["id"]: r for r in rows}
    assert by_id["edit"]["passed"], by_id["edit"]
    assert by_id["check"]["passed"], by_id["check"]
    assert by_id["broken"]["status"] == "setup_failed"
    assert "setup command 1 of 1: `echo preparing; exit 3`: exit code 3" in by_id["broken"]["error"]
    assert "preparing" in by_id["broken"]["error"]
    assert (batch_project.folder / "fixture" / "input.txt").read_text() == "original\n"
    assert not any("[never]" in r["messages"][1]["content"] for r in batch_project.server.requests)


def test_progress_is_one_plain_line_per_task_when_not_on_a_terminal(batch_project: BatchProject) -> None:
    batch_project.server.add_task("[a]", text("yes"))
    batch_project.server.add_task("[b]", text("no"))
    tasks = [{"id": "a", "prompt": "[a] go", "checks": [{"answer_matches": "yes"}]},
             {"id": "b", "prompt": "[b] go", "checks": [{"answer_matches": "yes"}]}]
    result, _ = batch_project.run(str(batch_project.tasks(tasks)), "--workers", "1")
    assert "[1/2] a passed (answered, 1 step," in result.output
    assert "[2/2] b FAILED (answered, 1 step," in result.output
    assert "\r" not in result.output


def test_ctrl_c_stops_cleanly_and_resume_finishes_the_rest(batch_project: BatchProject) -> None:
    names = [f"s{n}" for n in range(3)]  # stopped during the second: one done, one not run
    for name in names:  # twice: the task that was stopped asked once already
        batch_project.server.add_task(f"[{name}]", text(f"done {name}", delay=0.7), text(f"done {name}"))
    tasks_file = batch_project.tasks([{"id": n, "prompt": f"[{n}] go"} for n in names])
    output = batch_project.folder / "results.jsonl"
    command = [sys.executable, "-m", "nami_yaml", "batch", "run", str(tasks_file), "--config",
               str(batch_project.config), "--workers", "1", "-o", str(output)]
    process = subprocess.Popen(command, cwd=batch_project.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 60
    while not output.exists() or not output.read_text():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "stopping: no new task starts" in err
    kept = [json.loads(line) for line in output.read_text().splitlines()]  # every line is whole
    assert 1 <= len(kept) < len(names) and all(r["status"] == "answered" for r in kept)
    assert "not run" in out
    result, rows = batch_project.run(str(tasks_file), "--resume")
    assert result.exit_code == 0, result.output
    assert sorted(r["id"] for r in rows) == names


def test_an_untrusted_agent_yaml_found_upwards_is_refused_before_any_task(batch_project: BatchProject) -> None:
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go"}])
    refused = CliRunner().invoke(cli, ["batch", "run", str(tasks_file)])  # found from here, never trusted
    assert refused.exit_code == 2 and "is not trusted yet" in refused.output
    assert not (batch_project.folder / "tasks.results.jsonl").exists()
    assert CliRunner().invoke(cli, ["trust", "--yes"]).exit_code == 0
    batch_project.server.add_task("[a]", text("fine"))
    trusted = CliRunner().invoke(cli, ["batch", "run", str(tasks_file)])
    assert trusted.exit_code == 0, trusted.output
    assert read_results(batch_project.folder / "tasks.results.jsonl")[0]["passed"]


@pytest.mark.parametrize("variable", ["NAMI_BASE_URL", "OPENAI_BASE_URL"])
def test_a_task_file_cannot_send_the_api_key_to_an_endpoint_of_its_own(variable: str,
                                                                     batch_project: BatchProject) -> None:
    # No command in the file, nothing that looks like code: only an env that would move the endpoint.
    with FakeOpenAIServer() as elsewhere:
        elsewhere.add(text("thanks for the key"))
        if variable == "OPENAI_BASE_URL":  # read only where no base_url is set
            batch_project.config.write_text("model: {name: fake-model}\n", encoding="utf-8")
        tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "env": {variable: elsewhere.base_url}}])
        result, rows = batch_project.run(str(tasks_file))
        assert [request.headers.get("authorization") for request in elsewhere.requests] == []
    assert result.exit_code == 2 and rows == []
    assert f"{variable} would choose where your API key is sent" in result.output


@pytest.mark.parametrize("variable", ["NAMI_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "HOME"])
def test_a_task_file_cannot_choose_the_configuration_or_trust_store(variable: str,
                                                                    batch_project: BatchProject) -> None:
    """NAMI_CONFIG would load an agent.yaml of the file's choosing as the user's own (no trust asked); the
    XDG folders and HOME would move the user config and the trust store."""
    evil = batch_project.folder / "evil"
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "env": {variable: str(evil)}}])
    result, rows = batch_project.run(str(tasks_file))
    assert result.exit_code == 2 and rows == []
    assert f"{variable} would choose which configuration" in result.output and "Traceback" not in result.output


def test_a_task_runs_on_its_target(batch_project: BatchProject) -> None:
    with batch_project.config.open("a", encoding="utf-8") as config:
        config.write("targets: {dev: {}, prod: {env: {APP_ENV: production}}}\n"
                     "tools: {builtin: [], files: [where.yaml]}\n")
    (batch_project.folder / "where.yaml").write_text(
        "name: where\ndescription: d\nrisk: read\ntarget: true\n"
        "command: [sh, -c, 'echo \"$NAMI_TARGET $APP_ENV\" > where.txt']\n", encoding="utf-8")
    batch_project.server.add_task("[p]", tool_calls(call("where", {})), text("done"))
    tasks_file = batch_project.tasks([{"id": "p", "prompt": "[p] go", "target": "prod",
                                       "checks": [{"file_contains": {"path": "where.txt", "text": "prod production"}}]}])
    result, (row,) = batch_project.run(str(tasks_file))
    assert result.exit_code == 0, result.output
    assert row["passed"], row
    sent = batch_project.server.requests[0]["tools"][0]["function"]["parameters"]
    assert "target" not in sent["properties"]  # pinned by the task: the model is not offered the choice
