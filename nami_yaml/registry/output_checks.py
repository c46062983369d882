"""Checks of a tool's ``output:`` (how its stdout is shaped): only on a process's stdout, a format to read
it with before anything selects or cuts, a JMESPath expression that parses (its {param} placeholders naming
parameters), line filters whose placeholders name parameters, a grep pattern that compiles, a usable JSON
Schema."""

from __future__ import annotations

from nami_yaml.errors import ToolError
from nami_yaml.registry.argv_checks import check_placeholders, template_refs
from nami_yaml.registry.draft import ToolDraft
from nami_yaml.runners.filters import render_select, rendered_shape, select_refs
from nami_yaml.runners.options import OutputShape
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
        _check_select(draft, select)
    for key in ("grep", "lines", "head", "tail"):
        if isinstance(output.get(key), str):
            check_placeholders(draft, ("output", key), output[key])
    grep = output.get("grep")
    if isinstance(grep, str) and not template_refs(grep):
        try:
            rendered_shape(OutputShape(grep=grep), {})
        except ToolError as exc:
            draft.error(("output", "grep"), str(exc))
    schema = output.get("schema")
    if isinstance(schema, dict):
        for where, message in schema_problems(schema):
            draft.error(("output", "schema", *where), message)


def _check_select(draft: ToolDraft, select: str) -> None:
    for name in dict.fromkeys(select_refs(select)):
        if name not in draft.properties:
            declared = ", ".join(draft.properties) or "none"
            draft.error(("output", "select"), f"placeholder {{{name}}} names no parameter (declared: {declared})")
    problem = expression_problem(render_select(select, {}))  # each placeholder as the literal `null`
    if problem:
        draft.error(("output", "select"), problem)
