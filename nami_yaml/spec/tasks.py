"""Task files for ``nami batch``: YAML (``tasks:`` with a list) or JSONL (one task per line), checked
against the published schema and then for what a schema cannot say (unique ids, regexes that compile,
paths that stay in the workspace), every problem as ``file:line:col: $.path: message``."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, parse_yaml

MAX_TASK_FILE_BYTES = 50_000_000  # far more than config files: a task set may hold thousands of prompts
CHECK_KINDS = ("answer_matches", "file_exists", "file_contains", "command", "called", "not_called", "answer_field")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
_TASKS_KEY = re.compile(r"^tasks\s*:", re.M)
# A task's env reaches its settings (NAMI_MODEL picks a model), but must not choose where they come from or
# where the API key goes: the worker would send this machine's key to whatever address a task file wrote
# (setup commands never see the key), or load a config, user config or trust store of the file's choosing.
ENDPOINT_VARIABLES = ("NAMI_BASE_URL", "OPENAI_BASE_URL")
SETTINGS_VARIABLES = ("NAMI_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "HOME")


@dataclass(frozen=True)
class Task:
    """One task as written, plus where it came from (for messages) and the folder its paths are relative to."""

    id: str
    prompt: str
    raw: dict[str, Any]  # the task exactly as written: what travels to the worker
    base: Path  # the task file's folder
    where: str = ""  # file:line:col

    @property
    def checks(self) -> list[dict[str, Any]]:
        return list(self.raw.get("checks") or [])

    @property
    def limits(self) -> dict[str, Any]:
        return dict(self.raw.get("limits") or {})


@dataclass
class TaskFile:
    path: Path
    tasks: list[Task] = field(default_factory=list)
    digest: str = ""  # SHA-256 of the bytes the tasks were read from (what trusting it covers)

    def ids(self) -> list[str]:
        return [task.id for task in self.tasks]


def is_task_file(path: Path) -> bool:
    """Whether ``nami check`` should read ``path`` as a task file: a .jsonl file, or YAML with ``tasks:``."""
    if path.suffix.lower() in JSONL_SUFFIXES:
        return True
    if path.suffix.lower() not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(200_000)
    except OSError:
        return False
    return bool(_TASKS_KEY.search(head))


def load_tasks(path: Path) -> TaskFile:
    """Read and check a task file; raise SpecError listing every problem."""
    data, problems = _read(path)
    if data is None:
        raise SpecError(problems)
    tasks, problems = _checked(path, data)
    if problems:
        raise SpecError(problems)
    return TaskFile(path, tasks, hashlib.sha256(data).hexdigest())


def check_task_file(path: Path) -> tuple[list[Task], list[Problem]]:
    """The tasks of ``path`` and every problem in it (tasks are returned only when there is none)."""
    data, problems = _read(path)
    return _checked(path, data) if data is not None else ([], problems)


def _read(path: Path) -> tuple[bytes | None, list[Problem]]:
    name = str(path)
    try:
        data = path.read_bytes() if path.is_file() else None
    except OSError as exc:
        return None, [Problem(name, 1, 1, "$", f"cannot read the task file: {exc.strerror or exc}")]
    if data is None:
        return None, [Problem(name, 1, 1, "$", "no such file" if not path.exists() else "not a regular file")]
    return data, []


def _checked(path: Path, data: bytes) -> tuple[list[Task], list[Problem]]:
    name = str(path)
    if len(data) > MAX_TASK_FILE_BYTES:
        return [], [Problem(name, 1, 1, "$", f"larger than {MAX_TASK_FILE_BYTES:,} bytes; split it")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], [Problem(name, 1, 1, "$", f"not UTF-8 text: {exc.reason} at byte {exc.start}")]
    if path.suffix.lower() in JSONL_SUFFIXES:
        entries, problems = _jsonl_entries(text, name)
    else:
        entries, problems = _yaml_entries(text, name)
    base = path.resolve().parent
    problems += _semantic_problems(entries)
    problems += _answer_schemas(entries, base)
    if problems:
        return [], SpecError(problems).problems  # in file order
    if not entries:
        return [], [Problem(name, 1, 1, "$", "no tasks")]
    return [Task(value["id"], value.get("prompt", ""), value, base, _where(doc, where))
            for doc, where, value in entries], []


Entry = tuple[Document, JsonPath, dict[str, Any]]  # the document, the task's path in it, the task


def _yaml_entries(text: str, name: str) -> tuple[list[Entry], list[Problem]]:
    doc, problems = parse_yaml(text, name)
    if doc is None or problems:
        return [], problems
    if not isinstance(doc.value, dict):
        return [], [doc.problem((), "a task file is a mapping with `tasks:` (a list of tasks), or JSONL: "
                                    "one task per line in a .jsonl file")]
    problems = problems_for(doc, doc.value, (), _file_validator())
    listed = doc.value.get("tasks")
    if not isinstance(listed, list):
        return [], problems
    entries: list[Entry] = []
    check = validator("tasks", "task")
    for index, task in enumerate(listed):
        found = problems_for(doc, task, ("tasks", index), check)
        problems += found
        if not found:  # the checks beyond the schema need a task of the right shape
            entries.append((doc, ("tasks", index), task))
    return entries, problems


@cache
def _file_validator() -> Draft202012Validator:
    """The file's own keys; each task is checked on its own, so good tasks are checked further."""
    schema = copy.deepcopy(validator("tasks").schema)
    del schema["properties"]["tasks"]["items"]
    return Draft202012Validator(schema)


def _jsonl_entries(text: str, name: str) -> tuple[list[Entry], list[Problem]]:
    entries: list[Entry] = []
    problems: list[Problem] = []
    check = validator("tasks", "task")
    index = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(name, number, exc.colno, f"$[{index}]", f"not valid JSON: {exc.msg}"))
            index += 1
            continue
        doc = _line_document(line, number, name, index, value)
        if not isinstance(value, dict):
            problems.append(doc.problem((index,), "each line of a .jsonl task file is one task (a JSON object)"))
        else:
            found = problems_for(doc, value, (index,), check)
            problems += found
            if not found:
                entries.append((doc, (index,), value))
        index += 1
    if not entries and not problems:
        problems.append(Problem(name, 1, 1, "$", "no tasks: write one JSON object per line"))
    return entries, problems


def _line_document(line: str, number: int, name: str, index: int, value: Any) -> Document:
    """Positions for one JSONL line (JSON is YAML), shifted to its line and placed under ``$[index]``."""
    parsed, _ = parse_yaml(line, name)
    doc = Document(name, value, {(index,): (number, 1)})
    if parsed is not None and parsed.value == value:
        for path, (_, col) in parsed.positions.items():
            doc.positions[(index, *path)] = (number, col)
        for path, (_, col) in parsed.key_positions.items():
            doc.key_positions[(index, *path)] = (number, col)
    return doc


def _where(doc: Document, path: JsonPath) -> str:
    line, col = doc.position(path)
    return f"{doc.file}:{line}:{col}"


def _semantic_problems(entries: list[Entry]) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for doc, where, task in entries:
        task_id = task["id"]
        if task_id in seen:
            problems.append(doc.problem((*where, "id"), f"duplicate id {task_id!r} (first at {seen[task_id]})"))
        else:
            seen[task_id] = _where(doc, (*where, "id"))
        for name in task.get("env") or {}:
            if name in ENDPOINT_VARIABLES:
                problems.append(doc.problem((*where, "env", name), f"{name} would choose where your API key is "
                                            "sent; give the endpoint with --base-url or in agent.yaml", key=True))
            elif name in SETTINGS_VARIABLES:
                problems.append(doc.problem((*where, "env", name), f"{name} would choose which configuration, "
                                            "user config or trust store the task runs with; give the agent.yaml "
                                            "with --config", key=True))
        if ("prompt" in task) == ("replay" in task):
            problems.append(doc.problem(where, "give a prompt, or a session to replay (replay: SESSION_FILE), "
                                               "not both" if "prompt" in task else
                                        "a task needs a prompt, or a session to replay (replay: SESSION_FILE)"))
        workspace = task.get("workspace")
        if isinstance(workspace, Mapping):
            problems += _workspace_problems(doc, (*where, "workspace"), workspace)
        for number, check in enumerate(task.get("checks") or []):
            problems += _check_problems(doc, (*where, "checks", number), check)
    return problems


def _workspace_problems(doc: Document, where: JsonPath, workspace: Mapping[str, Any]) -> list[Problem]:
    if "path" in workspace and "git" in workspace:
        return [doc.problem(where, "give either path (a folder to copy) or git (a repository), not both")]
    if "path" not in workspace and "git" not in workspace:
        return [doc.problem(where, "give path (a folder to copy) or git (a repository, with an optional ref)")]
    if "ref" in workspace and "git" not in workspace:
        return [doc.problem((*where, "ref"), "ref goes with git: a folder has no refs", key=True)]
    return [doc.problem((*where, key), f"{key} {workspace[key]!r} starts with '-': git would take it for one of "
                                       "its options" + (" (write ./ before a folder)" if key == "git" else ""))
            for key in ("git", "ref") if str(workspace.get(key, "")).startswith("-")]


def _check_problems(doc: Document, where: JsonPath, check: Mapping[str, Any]) -> list[Problem]:
    if len(check) > 1:
        return [doc.problem(where, f"a check has one kind, this one has {len(check)}: {', '.join(check)}; "
                                   "write each as its own item")]
    kind, value = next(iter(check.items()))
    if kind == "answer_matches":
        try:
            re.compile(value)
        except re.error as exc:
            return [doc.problem((*where, kind), f"not a valid regular expression: {exc}")]
    if kind == "answer_field":
        return _answer_field_problems(doc, (*where, kind), value)
    if kind in ("file_exists", "file_contains"):
        path = value if kind == "file_exists" else value["path"]
        problem = workspace_path_problem(path)
        if problem:
            return [doc.problem((*where, kind) if kind == "file_exists" else (*where, kind, "path"), problem)]
    return []


def workspace_path_problem(path: str) -> str | None:
    """Why ``path`` does not name a file inside the task's workspace, or None."""
    parts = Path(path).parts
    if Path(path).is_absolute():
        return f"{path!r} is absolute; checks look inside the task's workspace: give a relative path"
    if ".." in parts:
        return f"{path!r} leaves the task's workspace (..); give a path inside it"
    return None


def _answer_field_problems(doc: Document, where: JsonPath, check: Mapping[str, Any]) -> list[Problem]:
    from nami_yaml.spec.expressions import expression_problem

    problems = []
    problem = expression_problem(check["path"])
    if problem:
        problems.append(doc.problem((*where, "path"), problem))
    if "equals" in check and "matches" in check:
        problems.append(doc.problem(where, "give equals or matches, not both"))
    if isinstance(check.get("matches"), str):
        try:
            re.compile(check["matches"])
        except re.error as exc:
            problems.append(doc.problem((*where, "matches"), f"not a valid regular expression: {exc}"))
    return problems


def _answer_schemas(entries: list[Entry], base: Path) -> list[Problem]:
    """Each task's answer_schema checked, and a file read now (relative to the task file), so the task that
    travels to a worker, or a Ray node, carries the schema itself."""
    from nami_yaml.spec.json_schemas import positioned_problems, read_schema_file

    problems: list[Problem] = []
    for doc, where, task in entries:
        schema = task.get("answer_schema")
        at = (*where, "answer_schema")
        if isinstance(schema, dict):
            problems += positioned_problems(doc, at, schema)
        elif isinstance(schema, str):
            try:
                task["answer_schema"] = read_schema_file(base / Path(schema).expanduser(), what="answer_schema")
            except SpecError as exc:
                problems += exc.problems
            except ConfigError as exc:
                problems.append(doc.problem(at, str(exc).removeprefix("answer_schema: ")))
    return problems
