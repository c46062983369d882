"""``nami run`` and ``nami chat`` as a user runs them: a real ``nami`` process, the real openai SDK, and the
fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.testing import FakeOpenAIServer, call, error, text, tool_calls
from tests.helpers import NAMI, run_nami, script_a_sleep, without_sandbox_notice
from tests.sandboxing import gone, need_bwrap, running


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_write_then_run_answer_on_stdout_progress_on_stderr(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(
        tool_calls(call("write_file", {"path": "hello.sh", "content": "echo hello from the script\n"})),
        tool_calls(call("bash", {"command": "bash hello.sh"})),
        text("The script prints a greeting."),
    )
    result = run_nami(fake_openai, "run", "--yes", "write a script and run it", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The script prints a greeting.\n"
    assert "→ write_file" in result.stderr and "→ bash" in result.stderr
    assert (workdir / "hello.sh").read_text() == "echo hello from the script\n"
    ran = tool_messages(fake_openai.requests[2])[-1]
    assert "hello from the script" in ran["content"]
    assert "Traceback" not in result.stderr


def test_with_stdout_and_stderr_both_redirected_the_answer_is_in_stdout_only(fake_openai: FakeOpenAIServer,
                                                                             workdir: Path) -> None:
    """`nami run … >o 2>e`: the answer in o, once; e is progress (a step's text before its tools, the tool
    lines, the totals), never the answer."""
    (workdir / "notes.txt").write_text("three notes\n")
    fake_openai.add(tool_calls(call("read_file", {"path": "notes.txt"}), content="Let me read the notes."),
                    text("The notes say: three notes."))
    result = run_nami(fake_openai, "run", "what do the notes say?", cwd=workdir)  # both are pipes here
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The notes say: three notes.\n"
    assert "The notes say" not in result.stderr
    assert without_sandbox_notice(result.stderr).splitlines()[:2] == ["Let me read the notes.", '→ read_file path="notes.txt" offset=1 limit=2000']
    assert result.stderr.splitlines()[-1].startswith("tokens: ")


def test_error_results_let_the_model_recover(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    (workdir / "real.txt").write_text("content\n")
    fake_openai.add(
        tool_calls(call("read_file", {"path": "missing.txt"})),
        tool_calls(call("list_dir", {})),
        tool_calls(call("no_such_tool", {}), call("read_file", '{"path": "real.txt"')),
        text("Found real.txt."),
    )
    result = run_nami(fake_openai, "run", "read the file", cwd=workdir)
    assert result.returncode == 0, result.stderr
    missing = tool_messages(fake_openai.requests[1])[0]["content"]
    assert missing.startswith("Error:") and "missing.txt" in missing
    assert "real.txt" in tool_messages(fake_openai.requests[2])[1]["content"]
    unknown, malformed = tool_messages(fake_openai.requests[3])[2:]
    assert "unknown tool 'no_such_tool'" in unknown["content"] and "read_file" in unknown["content"]
    assert "not valid JSON" in malformed["content"]
    assert result.stdout == "Found real.txt.\n"


def test_parallel_reads_answered_in_call_order(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    for name in "abc":
        (workdir / f"{name}.txt").write_text(f"file {name}\n")
    fake_openai.add(
        tool_calls(*(call("read_file", {"path": f"{n}.txt"}, id=f"call_{n}") for n in "abc")),
        text("done"),
    )
    result = run_nami(fake_openai, "run", "read three", cwd=workdir)
    assert result.returncode == 0, result.stderr
    answers = tool_messages(fake_openai.requests[1])
    assert [m["tool_call_id"] for m in answers] == ["call_a", "call_b", "call_c"]
    assert [("file " + n) in m["content"] for n, m in zip("abc", answers, strict=True)] == [True] * 3


def test_cut_off_response_runs_no_tool(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(
        tool_calls(call("write_file", {"path": "half.txt", "content": "x"}), finish_reason="length"),
        text("I will retry later."),
    )
    result = run_nami(fake_openai, "run", "--yes", "write", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert not (workdir / "half.txt").exists()
    assert "cut off" in tool_messages(fake_openai.requests[1])[0]["content"]


def test_server_error_is_retried(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(error(500, "upstream hiccup", retry_after=0.01), text("recovered"))
    result = run_nami(fake_openai, "run", "hi", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "recovered\n"
    assert len(fake_openai.requests) == 2


def test_authentication_error_is_one_clear_line(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(error(401, "Invalid API key"))
    result = run_nami(fake_openai, "run", "hi", cwd=workdir, env={"NAMI_API_KEY": "sk-secret-value-123"})
    assert result.returncode == 1
    assert "401" in result.stderr and "NAMI_API_KEY" in result.stderr
    assert "sk-secret-value-123" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_dead_endpoint_is_a_clear_error(workdir: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_nami(None, "run", "hi", cwd=workdir,
                  env={"NAMI_BASE_URL": f"http://127.0.0.1:{port}/v1", "NAMI_API_KEY": "k"})
    (workdir / "agent.yaml").write_text("model: {retries: 0}\n")
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    quick = run_nami(None, "run", "hi", cwd=workdir,
                 env={"NAMI_BASE_URL": f"http://127.0.0.1:{port}/v1", "NAMI_API_KEY": "k"})
    for outcome in (result, quick):
        assert outcome.returncode == 1
        assert f"127.0.0.1:{port}" in outcome.stderr
        assert "Traceback" not in outcome.stderr


def test_step_limit_has_its_own_exit_code(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(*(tool_calls(call("list_dir", {})) for _ in range(3)))
    result = run_nami(fake_openai, "run", "--max-steps", "2", "loop forever", cwd=workdir)
    assert result.returncode == 3
    assert "max_steps" in result.stderr or "steps" in result.stderr
    assert len(fake_openai.requests) == 2


def test_config_error_exits_2(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("model:\n  nmae: x\n")
    result = run_nami(None, "run", "hi", cwd=workdir)
    assert result.returncode == 2
    assert "agent.yaml:2:3: $.model.nmae: unknown key 'nmae'; did you mean 'name'?" in result.stderr


def test_write_denied_without_terminal_or_yes(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("write_file", {"path": "x.txt", "content": "x"})), text("ok"))
    result = run_nami(fake_openai, "run", "write", cwd=workdir)
    assert result.returncode == 0
    assert not (workdir / "x.txt").exists()
    refusal = tool_messages(fake_openai.requests[1])[0]["content"]
    assert refusal.startswith("Denied by no approver: ")
    assert "there is no terminal to ask on (permissions.write asks)" in refusal


def test_json_events(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("list_dir", {}), content="Looking."), text("All done."))
    result = run_nami(fake_openai, "run", "--json", "look", cwd=workdir)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    for needed in ("tool_call", "tool_result", "message", "final", "text_delta"):
        assert needed in types
    assert all(request["stream"] is True for request in fake_openai.requests)  # streaming by default
    assert types[-1] == "final" and events[-1]["text"] == "All done." and events[-1]["status"] == "answered"
    assert next(e for e in events if e["type"] == "tool_call")["name"] == "list_dir"


def test_json_error_event(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(error(400, "context too long"))
    result = run_nami(fake_openai, "run", "--json", "look", cwd=workdir)
    assert result.returncode == 1
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(e["type"] == "error" and "context too long" in e["message"] for e in events)


def test_request_prefix_is_stable_over_twenty_steps(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    (workdir / "a.txt").write_text("a\n")
    fake_openai.add(*(tool_calls(call("read_file" if i % 2 else "list_dir", {"path": "a.txt"} if i % 2 else {}))
                      for i in range(19)), text("finished"))
    result = run_nami(fake_openai, "run", "--max-steps", "25", "walk", cwd=workdir)
    assert result.returncode == 0, result.stderr
    raws = fake_openai.raw_requests
    assert len(raws) == 20
    bodies = [json.loads(raw) for raw in raws]
    tools_bytes = {json.dumps(body["tools"], sort_keys=False) for body in bodies}
    assert len(tools_bytes) == 1
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert after["messages"][: len(before["messages"])] == before["messages"]
    # Byte-level: each serialized request starts with the same bytes up to the end of the earlier messages.
    first_messages = json.dumps(bodies[0]["messages"][:2])
    assert all(json.dumps(b["messages"][:2]) == first_messages for b in bodies)




# The bash built-in, a command tool and a tool file's Python entry point (in its sandboxed child) running
# alone run on the loop's own thread, where Ctrl-C cancels them instead of raising: each is stopped, its
# process killed, its output kept.
@pytest.mark.parametrize("tool", ["bash", "command", "python"])
def test_ctrl_c_kills_the_running_tool_and_exits_130(fake_openai: FakeOpenAIServer, workdir: Path, tool: str) -> None:
    if tool == "python":
        need_bwrap()  # unsandboxed, the function runs inside nami, and is abandoned rather than stopped
    digit = {"bash": 5, "command": 7, "python": 3}[tool]
    marker = f"60.{os.getpid() % 1000:03d}{digit}"  # its sleep is found by its argument
    extra = script_a_sleep(fake_openai, tool, marker, workdir)
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url)
    process = subprocess.Popen([*NAMI, "run", "--yes", "--json", *extra, "sleep"], cwd=workdir, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not running(f"sleep {marker}"):
            assert time.monotonic() < deadline, "the tool never started"
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    events = [json.loads(line) for line in stdout.splitlines()]
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 1 and not results[0]["ok"]
    assert "nterrupted" in results[0]["content"]
    if tool == "command":
        assert results[0]["content"].startswith("Error: Interrupted by the user while this call was running")
        assert "started" in results[0]["content"]  # what it printed before Ctrl-C
    assert events[-1]["type"] == "final" and events[-1]["status"] == "interrupted"
    assert gone(f"sleep {marker}")


def test_chat_keeps_the_conversation_with_piped_stdin(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("Nice to meet you, Ann."), text("Your name is Ann."))
    result = run_nami(fake_openai, "chat", cwd=workdir, stdin="My name is Ann.\n/tools\n\nWhat is my name?\nexit\n")
    assert result.returncode == 0, result.stderr
    assert "Nice to meet you, Ann." in result.stdout and "Your name is Ann." in result.stdout
    assert "read_file" in result.stdout  # /tools
    second = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "Nice to meet you, Ann."


def test_chat_clear_forgets(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("one"), text("two"))
    result = run_nami(fake_openai, "chat", cwd=workdir, stdin="first\n/clear\nsecond\n")
    assert result.returncode == 0, result.stderr
    assert [m["role"] for m in fake_openai.requests[1]["messages"]] == ["system", "user"]


@pytest.mark.parametrize("args", [["--help"], ["tools", "list"], ["check"], ["context"], ["sessions"]])
def test_light_commands_do_not_import_openai(args: list[str], workdir: Path) -> None:
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            f"try:\n    cli({args!r}, prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "assert 'openai' not in sys.modules, 'openai was imported'\nprint('clean')")
    result = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().endswith("clean"), result.stderr


def test_ctrl_c_in_chat_returns_to_the_prompt(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("bash", {"command": "echo $$ > started; sleep 60"})), text("second answer"))
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url)
    process = subprocess.Popen([*NAMI, "chat", "--yes"], cwd=workdir, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdin is not None
        process.stdin.write("run the long thing\n")
        process.stdin.flush()
        deadline = time.monotonic() + 30
        while not (workdir / "started").exists() or not (workdir / "started").read_text().strip():
            assert time.monotonic() < deadline, "the tool never started"
            assert process.poll() is None
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        process.stdin.write("are you there?\nexit\n")
        process.stdin.flush()
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "(interrupted)" in stderr
    assert "second answer" in stdout
    history = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "user"]
    assert "nterrupted" in history[3]["content"]


def test_no_stream_sends_plain_requests(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("list_dir", {}), content="Let me look."), text("Empty folder."))
    result = run_nami(fake_openai, "run", "--no-stream", "look", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Empty folder.\n"
    assert "Let me look." in result.stderr  # a step's text is progress, not the answer
    assert all(not request.get("stream") for request in fake_openai.requests)


def test_nami_environment_is_not_readable_by_its_tools(workdir: Path) -> None:
    """Tools could otherwise read the model's key from /proc/$PPID/environ: nami makes itself non-dumpable,
    and a sandboxed tool does not see nami's process at all."""
    code = ("import ctypes\nfrom nami_yaml.privacy import keep_environment_private\nkeep_environment_private()\n"
            "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n")  # PR_GET_DUMPABLE
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "0"
    need_bwrap()
    (workdir / "probe.yaml").write_text(
        "name: probe\ndescription: d\nrisk: read\n"
        "script: cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c NAMI_PROBE_MARK || true\n")
    env = {**os.environ, "OPENAI_API_KEY": "sk-NAMI_PROBE_MARK"}
    result = subprocess.run([*NAMI, "tools", "call", "--tools", "probe.yaml", "probe"], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"


def test_run_refuses_an_untrusted_project(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("permissions: {exec: allow}\n")
    result = run_nami(fake_openai, "run", "hi", cwd=workdir)
    assert result.returncode == 2 and "not trusted yet" in result.stderr
    assert fake_openai.requests == []


def test_an_answer_cut_off_at_the_output_limit_says_so(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("The first half of a long", finish_reason="length"))
    result = run_nami(fake_openai, "run", "explain", cwd=workdir)
    assert result.returncode == 0
    assert result.stdout == "The first half of a long\n"
    assert "cut off at the model's output limit" in result.stderr
