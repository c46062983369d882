"""One fake server for several runs (a script per run, or per task) and script files checked by a schema."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import openai
import pytest

from nami_yaml.errors import SpecError
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from nami_yaml.testing.script_file import load_script


def ask(server: FakeOpenAIServer, messages: list[dict]) -> str:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    reply = sdk.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    message = reply.choices[0].message
    return message.content or message.tool_calls[0].function.name  # type: ignore[index]


def user(task: str) -> list[dict]:
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": task}]


def test_each_new_conversation_gets_the_next_run_script() -> None:
    with FakeOpenAIServer(runs=[[tool_calls(call("list_dir", {}, id="a1")), "first done"], ["second done"]]) as srv:
        assert ask(srv, user("task one")) == "list_dir"
        assert ask(srv, user("task two")) == "second done"  # a new conversation: the next run
        follow_up = [*user("task one"), {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a1", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a1", "content": "x"}]
        assert ask(srv, follow_up) == "first done"  # the first conversation goes on with its own script
        assert srv.remaining == 0
        with pytest.raises(openai.InternalServerError, match="all 2 run scripts are taken"):
            ask(srv, user("task three"))


def test_concurrent_runs_get_their_own_answers_by_task() -> None:
    tasks = {f"job {n}": [text(f"answer {n}", delay=0.05 * (3 - n))] * 2 for n in range(3)}
    answers: dict[int, list[str]] = {}

    def run(n: int) -> None:
        answers[n] = [ask(srv, user(f"please do job {n} now")) for _ in range(2)]

    with FakeOpenAIServer(tasks=tasks) as srv:
        threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert srv.remaining == 0
        with pytest.raises(openai.InternalServerError, match="no task script matches the first user message"):
            ask(srv, user("something else"))
    assert answers == {n: [f"answer {n}"] * 2 for n in range(3)}


def write_script(tmp_path: Path, text_: str) -> Path:
    path = tmp_path / "script.json"
    path.write_text(text_)
    return path


@pytest.mark.parametrize(("script", "expected"), [
    ('[\n  {"tool_call": [{"name": "f"}]}\n]', "2:4: $[0].tool_call: unknown key 'tool_call'; did you mean 'tool_calls'?"),
    ('[\n  {"tool_calls": [\n    {"name": "f", "args": {}}\n  ]}\n]',
     "3:19: $[0].tool_calls[0].args: unknown key 'args'; did you mean 'arguments'?"),
    ('[\n  {"content": "a",}\n]', "2:19: $: not valid JSON: Expecting property name enclosed in double quotes"),
    ('[{"error": {"status": 200, "message": "x"}}]', "1:23: $[0].error.status: 200 is less than the minimum of 400"),
    ('[{"delay": -1}]', "1:12: $[0].delay: -1 is less than the minimum of 0"),
    ('{"runs": [["a"]], "tasks": {}}', '1:1: $: give either "runs" or "tasks"'),
    ('{"tasks": {"deploy": [{"malformed": "xml"}]}}',
     '1:37: $.tasks.deploy[0].malformed: "xml" is not one of: "utf8", "json", "types"'),
    ('"hello"', '1:1: $: a script is a list of responses, {"runs": [[...], ...]} or {"tasks": {"part of the task": [...]}}'),
])
def test_script_files_are_checked_with_positions(tmp_path: Path, script: str, expected: str) -> None:
    path = write_script(tmp_path, script)
    with pytest.raises(SpecError) as failure:
        load_script(path)
    assert str(failure.value) == f"{path}:{expected}"


def test_a_checked_script_file_loads_runs_and_tasks(tmp_path: Path) -> None:
    plan = load_script(write_script(tmp_path, json.dumps({"runs": [["a", {"tool_calls": [{"name": "f", "arguments": "{"}]}]]})))
    assert [r.content for r in plan.runs[0]] == ["a", None] and plan.runs[0][1].calls[0].arguments == "{"
    plan = load_script(write_script(tmp_path, json.dumps({"tasks": {"logs": [{"end_after": 0, "send_done": False}]}})))
    assert plan.tasks["logs"][0].end_after == 0 and plan.tasks["logs"][0].send_done is False


def test_the_server_command_reports_a_bad_script_without_a_traceback(tmp_path: Path) -> None:
    path = write_script(tmp_path, '[{"tool_call": []}, {"content": 3}]')
    result = subprocess.run([sys.executable, "-m", "nami_yaml.testing", "--port", "0", "--script", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{path}:1:3: $[0].tool_call: unknown key 'tool_call'; did you mean 'tool_calls'?",
        f"{path}:1:33: $[1].content: expected string or null, got integer 3",
    ]
    assert result.stdout == ""
