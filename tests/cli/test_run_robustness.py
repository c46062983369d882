"""``nami run`` against servers that misbehave and as people really run it: a real ``nami`` process, the
real openai SDK and the fake server. Every failure is one line (``--json``: an ``error`` and one ``final``
event), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import NAMI, run_nami


def events(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def one_retry(workdir: Path, extra: str = "") -> str:
    """A config named with --config (no trust step) that retries once, so failing runs stay quick."""
    path = workdir.parent / "fast.yaml"
    path.write_text(f"model: {{retries: 1}}\n{extra}")
    return str(path)


# -- servers that break off or send garbage ---------------------------------------------------------------

def test_an_empty_stream_is_asked_again_whole(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    # A stream that ends before its first event (llama-cpp-python's, on a prompt longer than its context) is asked
    # for again without streaming, where a server says why; here the plain answer comes.
    fake_openai.add(text("never", end_after=0, send_done=False), text("the answer"))
    result = run_nami(fake_openai, "run", "-c", one_retry(workdir), "hi", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "the answer"
    assert [bool(r.get("stream")) for r in fake_openai.requests] == [True, False]


def test_a_cut_stream_is_retried_then_one_line_exit_1(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(*(text("never", end_after=1, send_done=False) for _ in range(2)))
    result = run_nami(fake_openai, "run", "-c", one_retry(workdir), "hi", cwd=workdir)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: the stream from {fake_openai.base_url} ended before the model finished (1 event received); "
        "1 retry did not help")
    assert "Traceback" not in result.stderr
    assert len(fake_openai.requests) == 2


def test_a_call_cut_in_its_arguments_runs_nothing(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    cut = tool_calls(call("write_file", {"path": "half.txt", "content": "data"}), end_after=3)
    fake_openai.add(cut, cut)
    result = run_nami(fake_openai, "run", "--yes", "--json", "-c", one_retry(workdir), "write", cwd=workdir)
    assert result.returncode == 1
    assert not (workdir / "half.txt").exists()
    seen = events(result)
    assert [e["type"] for e in seen if e["type"] in ("tool_call", "error", "final")] == ["error", "final"]
    assert "(3 events received)" in seen[-1]["error"] and seen[-1]["status"] == "error"


def test_limits_of_one_response_from_agent_yaml(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    from nami_yaml.session.store import SessionStore

    config = one_retry(workdir, "limits: {max_response_bytes: 5000, max_tool_calls_per_turn: 2}\n")
    writes = [call("write_file", {"path": f"f{i}.txt", "content": "data"}) for i in range(5)]
    fake_openai.add(tool_calls(*writes), text("wrote two"), text("q" * 20_000))
    first = run_nami(fake_openai, "run", "--yes", "-c", config, "write", cwd=workdir)
    assert first.returncode == 0, first.stderr
    # The workspace is the folder of the config named with -c.
    assert sorted(p.name for p in workdir.parent.glob("f*.txt")) == ["f0.txt", "f1.txt"]
    answers = [m["content"] for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"]
    assert len(answers) == 5 and all("limits.max_tool_calls_per_turn" in a for a in answers[2:])

    second = run_nami(fake_openai, "run", "-c", config, "--continue", "say a lot", cwd=workdir)
    assert second.returncode == 1 and "Traceback" not in second.stderr
    assert "error: " in second.stderr and "limits.max_response_bytes (5,000 bytes)" in second.stderr
    assert len(fake_openai.requests) == 3  # not retried
    [session] = SessionStore().ids()
    assert "qqqq" not in SessionStore().path(session).read_text()  # nothing of the cut answer kept


@pytest.mark.parametrize("kind", ["utf8", "json", "types"])
def test_malformed_streams_are_model_errors_with_a_final_event(fake_openai: FakeOpenAIServer, workdir: Path,
                                                               kind: str) -> None:
    fake_openai.add(*(text("hello there", malformed=kind) for _ in range(2)))
    result = run_nami(fake_openai, "run", "--json", "-c", one_retry(workdir), "hi", cwd=workdir)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    seen = events(result)
    assert [e["type"] for e in seen].count("final") == 1 and seen[-1]["type"] == "final"
    assert seen[-1]["error"].startswith(f"malformed stream from {fake_openai.base_url}: event 2")
    assert any(e["type"] == "error" for e in seen)


def test_a_strict_server_that_refuses_null_content_gets_empty_text(workdir: Path) -> None:
    with FakeOpenAIServer([tool_calls(call("list_dir", {})), text("listed")], refuse_null_content=True) as server:
        result = run_nami(server, "run", "list", cwd=workdir)
        second = server.requests[1]["messages"]
    assert result.returncode == 0, result.stderr
    assert result.stdout == "listed\n"
    assert second[2]["role"] == "assistant" and second[2]["content"] == ""


def test_usage_not_reported_is_said_not_zeroed(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("one", usage=None), text("two", usage=None))
    human = run_nami(fake_openai, "run", "hi", cwd=workdir)
    assert human.returncode == 0
    # The totals line marks every figure as an estimate and says the server reported none.
    assert "(~ estimated: no usage reported for 1 of 1 request)" in human.stderr
    assert " 0 in" not in human.stderr and "~1" in human.stderr
    final = events(run_nami(fake_openai, "run", "--json", "hi", cwd=workdir))[-1]
    assert final["usage_reported"] is False and final["totals"]["estimated"] is True
    assert final["usage"]["prompt_tokens"] == final["totals"]["prompt_tokens"] > 0  # the estimate, marked


# -- --json always ends with exactly one final event ------------------------------------------------------

@pytest.mark.parametrize("case", ["no key", "config error", "unreachable", "untrusted"])
def test_json_always_ends_with_exactly_one_final(workdir: Path, case: str) -> None:
    env = {"NAMI_BASE_URL": "http://127.0.0.1:9/v1", "NAMI_API_KEY": "k"}
    args = ["run", "--json", "hi"]
    if case == "no key":
        # DeepSeek's own endpoint without $DEEPSEEK_API_KEY (another endpoint is not DeepSeek: its key is not asked)
        env = {"NAMI_MODEL": "m"}
    elif case == "config error":
        (workdir / "agent.yaml").write_text("model: {nmae: x}\n")
    elif case == "unreachable":
        no_retry = workdir.parent / "no-retry.yaml"
        no_retry.write_text("model: {retries: 0}\n")
        args[2:2] = ["-c", str(no_retry)]
    else:
        (workdir / "agent.yaml").write_text("permissions: {exec: allow}\n")
    result = run_nami(None, *args, cwd=workdir, env=env)
    seen = events(result)
    assert [e["type"] for e in seen].count("final") == 1 and seen[-1]["type"] == "final", result.stdout
    assert seen[-1]["status"] == "error" and seen[-1]["error"]
    assert seen[-2]["type"] == "error" and seen[-2]["message"] == seen[-1]["error"]
    assert result.returncode == (2 if case in ("config error", "untrusted", "no key") else 1)
    assert "Traceback" not in result.stderr
    expected = {"no key": "no API key", "config error": "nmae", "unreachable": "cannot reach",
                "untrusted": "not trusted yet"}[case]
    assert expected in seen[-1]["error"]


# -- piped input -------------------------------------------------------------------------------------------

def test_piped_input_is_attached_to_the_task(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("nginx cannot bind port 80"))
    log = "Jan 01 nginx[1]: bind() to 0.0.0.0:80 failed (98: Address already in use)\n"
    result = run_nami(fake_openai, "run", "why does it fail?", cwd=workdir, stdin=log)
    assert result.returncode == 0, result.stderr
    said = fake_openai.requests[0]["messages"][-1]["content"]
    assert said == f"why does it fail?\n\nAttached input (piped to nami on stdin).\n<<<\n{log}>>>"


def test_long_piped_input_is_capped_like_a_tool_result(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("ok"))
    lines = "".join(f"line {i}\n" for i in range(1, 5001))
    config = one_retry(workdir, "limits: {max_output: 200}\n")
    result = run_nami(fake_openai, "run", "-c", config, "summarise", cwd=workdir, stdin=lines)
    assert result.returncode == 0, result.stderr
    said = fake_openai.requests[0]["messages"][-1]["content"]
    assert f"It was {len(lines):,} characters, 5,000 lines: only its start and end are shown" in said
    spill = Path(said.split("the whole input is in ", 1)[1].split(".txt", 1)[0] + ".txt")
    assert spill.read_text() == lines
    body = said.split("<<<\n", 1)[1]
    assert body.startswith("line 1\nline 2\n") and body.endswith("line 5000\n>>>")
    assert "characters omitted" in body and len(body) < 200 + 250  # the budget, the marker with its path


def test_dash_reads_the_task_from_stdin(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("done"))
    result = run_nami(fake_openai, "run", "-", cwd=workdir, stdin="list the folder\n")
    assert result.returncode == 0, result.stderr
    assert fake_openai.requests[0]["messages"][-1]["content"] == "list the folder"
    empty = run_nami(fake_openai, "run", "--json", "-", cwd=workdir, stdin="")
    assert empty.returncode == 2 and "nothing was piped in" in empty.stderr
    assert events(empty)[-1]["type"] == "final" and len(fake_openai.requests) == 1


def test_no_input_piped_leaves_the_task_alone(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("hi"))
    done = subprocess.run([*NAMI, "run", "hello"], cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, NAMI_BASE_URL=fake_openai.base_url))
    assert done.returncode == 0, done.stderr
    assert fake_openai.requests[0]["messages"][-1]["content"] == "hello"


# -- the workspace is the project, wherever nami starts in it ----------------------------------------------

def test_run_from_a_subfolder_works_in_the_project(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {files: [tools/]}\n")
    (workdir / "tools").mkdir()
    (workdir / "tools" / "where.yaml").write_text("name: where\ndescription: d\nrisk: read\ncwd: deploy\n"
                                                  "command: [pwd]\n")
    (workdir / "deploy").mkdir()
    (workdir / "a.txt").write_text("project file\n")
    sub = workdir / "src" / "pkg"
    sub.mkdir(parents=True)
    assert run_nami(None, "trust", "--yes", cwd=workdir).returncode == 0
    fake_openai.add(tool_calls(call("read_file", {"path": "a.txt"}), call("where", {})), text("done"))
    result = run_nami(fake_openai, "run", "read a.txt", cwd=sub)
    assert result.returncode == 0, result.stderr
    system, *_ = fake_openai.requests[0]["messages"]
    assert f"Workspace (tool paths are relative to it): {workdir}\nCurrent folder: src/pkg (relative to the workspace)\n" in system["content"]
    read, where = (m["content"] for m in fake_openai.requests[1]["messages"] if m["role"] == "tool")
    assert "project file" in read
    assert where.strip() == str(workdir / "deploy")
    shown = run_nami(None, "config", cwd=sub)
    line = next(x for x in shown.stdout.splitlines() if x.startswith("workspace "))
    assert json.dumps(str(workdir)) in line and "default: the folder of agent.yaml" in line


def test_config_always_shows_the_workspace(workdir: Path) -> None:
    data = json.loads(run_nami(None, "config", "--json", cwd=workdir).stdout)
    assert data["values"]["workspace"] == {"value": str(workdir), "source": "default: the current folder"}
