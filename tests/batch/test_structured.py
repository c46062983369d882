"""Structured answers in a batch: a task's answer_schema (inline or a file), checked with the task file,
and answer_field checks reading fields of the answer with JMESPath."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.batch.checks import RunFacts, run_checks
from nami_yaml.spec.tasks import check_task_file, load_tasks
from nami_yaml.testing import text
from tests.batch.conftest import BatchProject
from tests.helpers import write

ANSWER = {"status": "degraded", "pods": [{"name": "web-1", "phase": "Running", "restarts": 0},
                                         {"name": "worker-1", "phase": "Pending", "restarts": 27}],
          "healthy": False, "count": 2}


def facts(tmp_path: Path, value: Any = ANSWER, no_value: str | None = None) -> RunFacts:
    return RunFacts("(the text)", [], tmp_path, {"PATH": os.environ["PATH"]}, lambda: 30.0, None, value, no_value, sandbox=None)


CASES: list[tuple[dict[str, Any], bool, str]] = [
    ({"path": "status", "equals": "degraded"}, True, "the answer's status is \"degraded\""),
    ({"path": "status", "equals": "ok"}, False, "the answer's status is \"degraded\", not \"ok\""),
    ({"path": "pods[?phase!='Running'] | length(@)", "equals": 1}, True,
     "the answer's pods[?phase!='Running'] | length(@) is 1"),
    ({"path": "pods[?restarts > `5`].name", "equals": ["worker-1"]}, True,
     "the answer's pods[?restarts > `5`].name is [\"worker-1\"]"),
    ({"path": "count", "equals": 2.0}, True, "the answer's count is 2"),
    ({"path": "healthy", "equals": 0}, False, "the answer's healthy is false, not 0"),  # false is not 0
    ({"path": "pods[0].name", "matches": "^web-"}, True, "the answer's pods[0].name matches /^web-/: \"web-1\""),
    ({"path": "count", "matches": "2"}, False, "the answer's count is 2, not a string to match /2/"),
    ({"path": "status"}, True, "the answer's status is \"degraded\""),
    ({"path": "owner"}, False, "the answer has no owner (null)"),
    ({"path": "sum(status)"}, False, "sum(status) cannot be read from the answer: In function sum()"),
]


@pytest.mark.parametrize(("check", "passed", "reason"), CASES, ids=[c[0]["path"] for c in CASES])
def test_answer_field(tmp_path: Path, check: dict[str, Any], passed: bool, reason: str) -> None:
    [result] = run_checks([{"answer_field": check}], facts(tmp_path))
    assert result["passed"] is passed
    assert result["reason"].startswith(reason), result["reason"]


def test_answer_field_without_a_json_answer_says_why(tmp_path: Path) -> None:
    [result] = run_checks([{"answer_field": {"path": "status"}}],
                          facts(tmp_path, None, "the answer is not valid JSON (Expecting value at line 1 column 1)"))
    assert not result["passed"]
    assert result["reason"] == ("no JSON answer to read status from: the answer is not valid JSON "
                                "(Expecting value at line 1 column 1)")


def test_the_task_file_checks_schemas_and_paths(tmp_path: Path) -> None:
    write(tmp_path / "schemas" / "status.json", '{"type": "object", "required": ["status"]}')
    path = write(tmp_path / "tasks.yaml", """\
tasks:
  - id: good
    prompt: p
    answer_schema: schemas/status.json
    limits: {schema_retries: 0}
    checks:
      - answer_field: {path: status, equals: ok}
  - id: bad
    prompt: p
    answer_schema: {type: objekt}
    checks:
      - answer_field: {path: "pods[?phase", equals: 1, matches: x}
      - answer_field: {path: status, matches: "("}
  - id: missing
    prompt: p
    answer_schema: nowhere.json
""")
    tasks, problems = check_task_file(path)
    assert [str(p).removeprefix(f"{path}:") for p in problems] == [
        "10:27: $.tasks[1].answer_schema.type: not a valid JSON Schema: 'objekt' is not one of ['array', 'boolean', "
        "'integer', 'null', 'number', 'object', 'string']; did you mean 'object'?",
        "12:23: $.tasks[1].checks[0].answer_field: give equals or matches, not both",
        "12:30: $.tasks[1].checks[0].answer_field.path: not a valid JMESPath expression: Incomplete expression "
        "(at character 12)",
        "13:47: $.tasks[1].checks[1].answer_field.matches: not a valid regular expression: missing ), unterminated "
        "subpattern at position 0",
        f"16:20: $.tasks[2].answer_schema: cannot read the schema file {tmp_path / 'nowhere.json'}: No such file "
        "or directory",
    ]
    write(path, path.read_text().split("  - id: bad")[0])
    [task] = load_tasks(path).tasks
    assert task.raw["answer_schema"] == {"type": "object", "required": ["status"]}  # read now: it travels whole


def test_a_batch_task_with_an_answer_schema(batch_project: BatchProject) -> None:
    batch_project.server.add_task("[pods]", text("They look fine."), text('{"status": "ok", "pods": 3}'))
    batch_project.server.add_task("[never]", text("no"), text("still no"))
    tasks = [{"id": "pods", "prompt": "[pods] report", "answer_schema": {"type": "object", "required": ["status"]},
              "checks": [{"answer_field": {"path": "status", "equals": "ok"}},
                         {"answer_field": {"path": "pods", "equals": 3}}]},
             {"id": "never", "prompt": "[never] report", "limits": {"schema_retries": 1},
              "answer_schema": {"type": "object"}}]
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--workers", "1")
    by_id = {row["id"]: row for row in rows}
    assert by_id["pods"]["passed"], by_id["pods"]
    assert by_id["pods"]["answer_value"] == {"status": "ok", "pods": 3}
    assert by_id["pods"]["steps"] == 2
    assert by_id["never"]["status"] == "invalid_answer" and not by_id["never"]["passed"]
    assert "no answer matching the answer schema after 1 retry" in by_id["never"]["error"]
    assert result.exit_code == 1
