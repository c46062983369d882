"""Task files: YAML and JSONL read into tasks, every mistake reported as file:line:col: $.path: message,
by `nami batch run` before anything runs and by `nami check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import cli
from nami_yaml.errors import SpecError
from nami_yaml.spec.tasks import check_task_file, is_task_file, load_tasks

GOOD_YAML = """\
tasks:
  - id: fix-readme
    prompt: Fix the typo in README.md
    workspace: fixtures/repo
    setup: ["make deps", [git, status]]
    env: {LANG: C}
    limits: {max_steps: 10, max_cost: 0.05, wall_time: 300}
    checks:
      - answer_matches: "(?i)fixed"
      - file_exists: README.md
      - file_contains: {path: README.md, text: receive}
      - command: grep -q receive README.md
      - called: edit_file
      - not_called: bash
  - id: from-git
    prompt: Summarize the last commit
    workspace: {git: https://example.com/repo.git, ref: v1.2}
"""

BAD_YAML = """\
tasks:
  - id: a
    prompt: x
    workspace: {gti: foo}
    checks:
      - file_exist: x
  - id: b
    prompt: ""
    limits: {max_step: 3}
  - id: c
    prompt: fine shape, wrong content
    workspace: {path: foo, git: bar}
    checks:
      - answer_matches: "("
      - file_exists: ../etc/passwd
      - {called: a, not_called: b}
      - file_contains: {path: /etc/passwd, text: root}
  - id: c
    prompt: again
    workspace: {path: foo, ref: main}
"""


def test_a_yaml_task_file_loads_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text(GOOD_YAML)
    loaded = load_tasks(path)
    assert loaded.ids() == ["fix-readme", "from-git"]
    first = loaded.tasks[0]
    assert first.prompt == "Fix the typo in README.md" and first.base == tmp_path
    assert first.limits == {"max_steps": 10, "max_cost": 0.05, "wall_time": 300}
    assert [next(iter(c)) for c in first.checks] == [
        "answer_matches", "file_exists", "file_contains", "command", "called", "not_called"]
    assert first.where == f"{path}:2:5"


def test_every_mistake_is_reported_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text(BAD_YAML)
    _, problems = check_task_file(path)
    assert [str(p).removeprefix(f"{path}:") for p in problems] == [
        "4:17: $.tasks[0].workspace.gti: unknown key 'gti'; did you mean 'git'?",
        "6:9: $.tasks[0].checks[0].file_exist: unknown key 'file_exist'; did you mean 'file_exists'?",
        "8:13: $.tasks[1].prompt: '' should be non-empty",
        "9:14: $.tasks[1].limits.max_step: unknown key 'max_step'; did you mean 'max_steps'?",
        "12:16: $.tasks[2].workspace: give either path (a folder to copy) or git (a repository), not both",
        "14:25: $.tasks[2].checks[0].answer_matches: not a valid regular expression: missing ), "
        "unterminated subpattern at position 0",
        "15:22: $.tasks[2].checks[1].file_exists: '../etc/passwd' leaves the task's workspace (..); give a path "
        "inside it",
        "16:9: $.tasks[2].checks[2]: a check has one kind, this one has 2: called, not_called; write each as its "
        "own item",
        "17:31: $.tasks[2].checks[3].file_contains.path: '/etc/passwd' is absolute; checks look inside the task's "
        "workspace: give a relative path",
        "18:9: $.tasks[3].id: duplicate id 'c' (first at " + f"{path}:10:9)",
        "20:28: $.tasks[3].workspace.ref: ref goes with git: a folder has no refs",
    ]
    with pytest.raises(SpecError):
        load_tasks(path)


def test_jsonl_has_one_task_per_line_and_positions_on_that_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "j1", "prompt": "p"}\n\n{"id": "j1", "prompt": 3}\n{oops\n[1]\n'
                    '{"id": "j1", "prompt": "q"}\n')
    _, problems = check_task_file(path)
    assert [str(p).removeprefix(f"{path}:") for p in problems] == [
        "3:24: $[1].prompt: expected string, got integer 3",
        "4:2: $[2]: not valid JSON: Expecting property name enclosed in double quotes",
        "5:1: $[3]: each line of a .jsonl task file is one task (a JSON object)",
        "6:8: $[4].id: duplicate id 'j1' (first at " + f"{path}:1:8)",
    ]
    path.write_text("".join(json.dumps({"id": f"t{n}", "prompt": f"p{n}"}) + "\n" for n in range(3)))
    assert load_tasks(path).ids() == ["t0", "t1", "t2"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("empty.jsonl", "\n", "no tasks: write one JSON object per line"),
    ("list.yaml", "- id: a\n  prompt: b\n", "a task file is a mapping with `tasks:`"),
    ("none.yaml", "tasks: []\n", "should be non-empty"),
    ("syntax.yaml", "tasks: [\n", "YAML syntax error"),
])
def test_files_that_are_no_task_files_say_so(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    _, problems = check_task_file(path)
    assert problems and message in problems[0].message


def test_a_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    _, problems = check_task_file(tmp_path / "nope.yaml")
    assert [p.message for p in problems] == ["no such file"]


def test_task_files_are_told_from_tool_files(tmp_path: Path) -> None:
    (tmp_path / "tasks.yaml").write_text(GOOD_YAML)
    (tmp_path / "tool.yaml").write_text("name: t\ndescription: d\ncommand: [echo]\n")
    assert is_task_file(tmp_path / "tasks.yaml")
    assert is_task_file(tmp_path / "anything.jsonl")
    assert not is_task_file(tmp_path / "tool.yaml")


def test_nami_check_checks_task_files_given_as_paths(workdir: Path) -> None:
    (workdir / "tasks.yaml").write_text(GOOD_YAML)
    (workdir / "bad.yaml").write_text(BAD_YAML)
    good = CliRunner().invoke(cli, ["check", "tasks.yaml"])
    assert good.exit_code == 0, good.output
    assert "tasks.yaml: 2 tasks" in good.output
    bad = CliRunner().invoke(cli, ["check", "tasks.yaml", "bad.yaml"])
    assert bad.exit_code == 1
    assert "bad.yaml:4:17: $.tasks[0].workspace.gti: unknown key 'gti'" in bad.output
    assert "11 problems found" in bad.output


def test_the_schema_is_published(workdir: Path) -> None:
    result = CliRunner().invoke(cli, ["schema", "tasks"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["$id"] == "urn:nami-yaml:schemas:tasks"
    assert set(schema["$defs"]["check"]["properties"]) == {
        "answer_matches", "file_exists", "file_contains", "command", "called", "not_called", "answer_field"}


def test_batch_run_refuses_a_bad_task_file_before_anything_runs(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(BAD_YAML)
    result = CliRunner().invoke(cli, ["batch", "run", "bad.yaml"])
    assert result.exit_code == 2
    assert "bad.yaml:4:17: $.tasks[0].workspace.gti" in result.output
    assert not (workdir / "bad.results.jsonl").exists()


@pytest.mark.parametrize(("field", "value"), [("ref", "--orphan=x"), ("ref", "-b"), ("git", "--upload-pack=touch pwned")])
def test_a_git_ref_or_repository_that_would_be_an_option_is_refused(field: str, value: str, tmp_path: Path) -> None:
    """`git checkout --detach --orphan=x`: a ref starting with `-` is an option of git's, not a ref."""
    workspace = {"git": "repo", "ref": "main", field: value}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": "go", "workspace": workspace}) + "\n")
    _, problems = check_task_file(path)
    assert len(problems) == 1 and problems[0].path == f"$[0].workspace.{field}"
    assert "starts with '-'" in problems[0].message
