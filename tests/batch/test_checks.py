"""Each check passes and fails for the right reason, said in words a person can act on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.batch.checks import RunFacts, called_tools, run_checks
from nami_yaml.batch.workspace import command_sandbox
from nami_yaml.runtime import RuntimeContext


def facts(workspace: Path, answer: str | None = "The answer is 42.", called: list[str] | None = None,
          remaining: float = 30.0) -> RunFacts:
    context = RuntimeContext(workspace, host_env={"PATH": os.environ["PATH"]})
    return RunFacts(answer, called if called is not None else ["read_file", "edit_file", "read_file"], workspace,
                    {"PATH": os.environ["PATH"]}, lambda: remaining, sandbox=command_sandbox(context, setup=False))


CASES: list[tuple[dict[str, Any], bool, str]] = [
    ({"answer_matches": r"\b42\b"}, True, r"the answer matches /\b42\b/"),
    ({"answer_matches": "(?i)FORTY"}, False, "the answer does not match /(?i)FORTY/: 'The answer is 42.'"),
    ({"file_exists": "notes/todo.md"}, True, "notes/todo.md exists"),
    ({"file_exists": "missing.txt"}, False, "missing.txt does not exist"),
    ({"file_contains": {"path": "notes/todo.md", "text": "ship it"}}, True, "notes/todo.md contains 'ship it'"),
    ({"file_contains": {"path": "notes/todo.md", "text": "later"}}, False, "notes/todo.md does not contain 'later'"),
    ({"file_contains": {"path": "gone.md", "text": "x"}}, False, "gone.md does not exist"),
    ({"file_contains": {"path": "notes", "text": "x"}}, False, "notes is a folder"),
    ({"command": "grep -q ship notes/todo.md"}, True, "`grep -q ship notes/todo.md`: exit code 0"),
    ({"command": ["test", "-f", "nope"]}, False, "`test -f nope`: exit code 1\n[exit code: 1]"),
    ({"called": "edit_file"}, True, "edit_file was called once"),
    ({"called": "read_file"}, True, "read_file was called 2 times"),
    ({"called": "bash"}, False, "bash was not called (called: edit_file, read_file)"),
    ({"not_called": "bash"}, True, "bash was not called"),
    ({"not_called": "edit_file"}, False, "edit_file was called once"),
]


@pytest.mark.parametrize(("check", "passed", "reason"), CASES, ids=[str(c[0]) for c in CASES])
def test_a_check_passes_or_fails_with_its_reason(tmp_path: Path, check: dict[str, Any], passed: bool,
                                                 reason: str) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("ship it\n")
    assert run_checks([check], facts(tmp_path)) == [{"check": check, "passed": passed, "reason": reason}]


def test_every_check_is_evaluated_even_after_a_failure(tmp_path: Path) -> None:
    checks = [{"file_exists": "a"}, {"answer_matches": "42"}, {"file_exists": "b"}]
    assert [c["passed"] for c in run_checks(checks, facts(tmp_path))] == [False, True, False]


def test_without_an_answer_or_time_the_reasons_say_so(tmp_path: Path) -> None:
    (result,) = run_checks([{"answer_matches": "x"}], facts(tmp_path, answer=None))
    assert result["reason"] == "no answer to match /x/"
    (result,) = run_checks([{"command": "true"}], facts(tmp_path, remaining=0))
    assert not result["passed"] and result["reason"] == "not run: the task's wall time is used up"


def test_called_tools_are_read_from_the_assistant_messages() -> None:
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "1", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
                    {"id": "2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "1", "content": "x"},
                {"role": "assistant", "content": "done"}]
    assert called_tools(messages) == ["grep", "bash"]
