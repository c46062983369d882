"""Reading a ``--script`` file for the fake server: checked against a JSON Schema first, so a typo is a
``file:line:col: $.path: message`` line instead of a traceback or a key silently ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from nami_yaml.errors import Problem, SpecError
from nami_yaml.testing.responses import ScriptedResponse, response_from_dict


@dataclass
class ScriptPlan:
    """A script file's responses: answered in order (``responses``), per run, or per task."""

    responses: list[ScriptedResponse] = field(default_factory=list)
    runs: list[list[ScriptedResponse]] = field(default_factory=list)
    tasks: dict[str, list[ScriptedResponse]] = field(default_factory=dict)


@cache
def script_schema() -> dict[str, Any]:
    return json.loads(resources.files("nami_yaml.testing").joinpath("script.schema.json").read_text("utf-8"))


def script_problems(text: str, file: str) -> tuple[Any, list[Problem]]:
    """The parsed script and every problem in it, positioned."""
    # Imported here: serving without a script needs nothing beyond the standard library.
    from jsonschema import Draft202012Validator

    from nami_yaml.spec.validate import problems_for
    from nami_yaml.spec.yamlpos import Document, parse_yaml

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [Problem(file, exc.lineno, exc.colno, "$", f"not valid JSON: {exc.msg}")]
    doc, _ = parse_yaml(text, file)  # JSON is YAML: the parse gives every value's line and column
    if doc is None or doc.value != value:
        doc = Document(file, value, {(): (1, 1)})
    if not isinstance(value, (list, dict)):
        return value, [doc.problem((), 'a script is a list of responses, {"runs": [[...], ...]} or '
                                       '{"tasks": {"part of the task": [...]}}')]
    if isinstance(value, dict) and len(set(value) & {"runs", "tasks"}) != 1:
        return value, [doc.problem((), 'give either "runs" or "tasks"')]
    schema = script_schema()
    part = "responses" if isinstance(value, list) else "plan"
    check = Draft202012Validator({"$ref": f"#/$defs/{part}", "$defs": schema["$defs"]})
    return value, problems_for(doc, value, (), check)


def load_script(path: Path) -> ScriptPlan:
    """Read and check a script file; raise SpecError listing every problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(path), 1, 1, "$", f"cannot read the script: {exc}")]) from None
    value, problems = script_problems(text, str(path))
    if problems:
        raise SpecError(problems)
    if isinstance(value, list):
        return ScriptPlan(responses=[response_from_dict(r) for r in value])
    return ScriptPlan(runs=[[response_from_dict(r) for r in run] for run in value.get("runs", [])],
                      tasks={k: [response_from_dict(r) for r in v] for k, v in value.get("tasks", {}).items()})
