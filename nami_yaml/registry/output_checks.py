"""Checks of a tool's ``output:`` (how its stdout is shaped): only on a process's stdout, a format to read
it with before anything selects or cuts, a JMESPath expression that parses, a usable JSON Schema."""

from __future__ import annotations

from nami_yaml.registry.draft import ToolDraft
from nami_yaml.spec.expressions import expression_problem
from nami_yaml.spec.json_schemas import schema_problems


def check_output(draft: ToolDraft) -> None:
    output = draft.raw.get("output")
    if not isinstance(output, dict):
        return  # absent, or the tool schema says what is wrong with it
    if draft.runner_kind == "entrypoint":
        draft.error(("output",), "output: shapes the stdout of a command or script tool; an entry point "
                                 "returns its own value, so shape it there", key=True)
        return
    form = output.get("format", "text")
    if form == "text":
        for key in ("select", "max_items", "schema"):
            if key in output:
                draft.error(("output", key), f"output.{key} needs a format to read the output with (json, jsonl "
                                             "or lines); text is passed on as it is", key=True)
    select = output.get("select")
    if isinstance(select, str) and select.strip():
        problem = expression_problem(select)
        if problem:
            draft.error(("output", "select"), problem)
    schema = output.get("schema")
    if isinstance(schema, dict):
        for where, message in schema_problems(schema):
            draft.error(("output", "schema", *where), message)
