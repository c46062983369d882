"""``command:`` tools run as real processes: values stay single literal arguments, nothing reaches a shell."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor

ARGV = 'PYTHON, -c, "import sys,json;print(json.dumps(sys.argv[1:]))"'
ENVIRON = 'PYTHON, -c, "import os,sys,json;print(json.dumps(dict((k, os.environ.get(k)) for k in sys.argv[1:])))"'


def run(ctx: RuntimeContext, text: str, args: dict | str) -> ToolResult:
    ex = tool_executor(ctx, text.replace("PYTHON", sys.executable))
    return ex.execute(ex.registry.names()[0], args)


ECHO_VALUE = f"""\
name: echo_value
description: Show the argv.
parameters:
  type: object
  properties:
    value: {{type: string}}
  required: [value]
command: [{ARGV}, "{{value}}", "prefix:{{value}}"]
"""

HOSTILE = ["$(touch pwned)", "`touch pwned`", "; touch pwned", "| touch pwned", "&& touch pwned", "a\nb",
           "'quote\"s", "*", "~", "${HOME}", "> pwned", "a b  c"]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_arrive_as_one_literal_argument(ctx: RuntimeContext, value: str) -> None:
    (ctx.workspace / "some_file").write_text("x")  # a glob would expand to this
    result = run(ctx, ECHO_VALUE, {"value": value})
    assert result.ok, result.content
    assert json.loads(result.content) == [value, f"prefix:{value}"]
    assert not (ctx.workspace / "pwned").exists()
    assert not Path("pwned").exists()


def test_printf_sees_the_exact_value(ctx: RuntimeContext) -> None:
    text = ("name: p\ndescription: d\nparameters: {type: object, properties: {v: {type: string}}, required: [v]}\n"
            "command: [printf, '%s|', '{v}', '{v}']\n")
    result = run(ctx, text, {"v": "$(id) `id`; id"})
    assert result.content == "$(id) `id`; id|$(id) `id`; id|"


GIT_LOG = f"""\
name: log
description: Show commits of a ref.
parameters:
  type: object
  properties:
    ref: {{type: string}}
  required: [ref]
command: [{ARGV}, log, "{{ref}}"]
"""


def test_option_injection_is_refused_with_a_clear_message(ctx: RuntimeContext) -> None:
    result = run(ctx, GIT_LOG, {"ref": "--output=/tmp/x"})
    assert not result.ok
    assert result.content == (
        "Error: log: value '--output=/tmp/x' of parameter 'ref' starts with '-' and would be read as an "
        "option; pass a value that does not start with '-'"
    )


def test_option_injection_into_real_git_runs_nothing(ctx: RuntimeContext, tmp_path: Path) -> None:
    target = tmp_path / "written"
    text = ("name: log\ndescription: d\nparameters: {type: object, properties: {ref: {type: string}}, "
            "required: [ref]}\ncommand: [git, log, '{ref}']\n")
    result = run(ctx, text, {"ref": f"--output={target}"})
    assert not result.ok and "would be read as an option" in result.content
    assert not target.exists()


def test_allow_dash_lets_the_value_through(ctx: RuntimeContext) -> None:
    result = run(ctx, GIT_LOG + "allow_dash: [ref]\n", {"ref": "--output=/tmp/x"})
    assert result.ok
    assert json.loads(result.content) == ["log", "--output=/tmp/x"]


def test_nul_is_refused(ctx: RuntimeContext) -> None:
    result = run(ctx, ECHO_VALUE, '{"value": "a\\u0000b"}')
    assert not result.ok
    assert "NUL" in result.content


def test_unknown_keys_are_refused_unless_the_schema_allows_them(ctx: RuntimeContext) -> None:
    refused = run(ctx, ECHO_VALUE, {"value": "x", "extra": 1})
    assert not refused.ok
    assert "unknown parameter(s) 'extra'" in refused.content
    allowing = ECHO_VALUE.replace("  required: [value]\n", "  required: [value]\n  additionalProperties: true\n")
    allowed = run(ctx, allowing, {"value": "x", "extra": 1})
    assert allowed.ok and json.loads(allowed.content) == ["x", "prefix:x"]


LS_LIKE = f"""\
name: ls_like
description: Options, switches, lists and defaults.
parameters:
  type: object
  properties:
    all: {{type: boolean, default: false}}
    sort: {{type: string, enum: [name, size]}}
    n: {{type: integer, default: 20}}
    paths: {{type: array, items: {{type: string}}}}
command: [{ARGV}, "--max-count={{n}}", [--all, "{{all}}"], [--sort, "{{sort}}"], [--path, "{{paths}}"]]
"""


@pytest.mark.parametrize(("args", "argv"), [
    ({}, ["--max-count=20"]),
    ({"all": True}, ["--max-count=20", "--all"]),
    ({"all": False, "sort": "size", "n": 5}, ["--max-count=5", "--sort", "size"]),
    ({"paths": ["a b", "-rf", "c"]}, None),
    ({"paths": []}, ["--max-count=20"]),
    ({"paths": ["x", "y"]}, ["--max-count=20", "--path", "x", "--path", "y"]),
])
def test_groups_switches_arrays_and_defaults(ctx: RuntimeContext, args: dict, argv: list[str] | None) -> None:
    result = run(ctx, LS_LIKE, args)
    if argv is None:  # an array item starting with '-' is refused like any other value
        assert not result.ok and "'-rf' of parameter 'paths'" in result.content
        return
    assert result.ok, result.content
    assert json.loads(result.content) == argv


def test_literal_braces_reach_awk_intact(ctx: RuntimeContext) -> None:
    text = ("name: first_column\ndescription: d\nparameters: {type: object, properties: {text: {type: string}}, "
            "required: [text]}\nstdin: '{text}'\ncommand: [awk, '{{print $1}}']\n")
    result = run(ctx, text, {"text": "alpha beta\ngamma delta\n"})
    assert result.ok, result.content
    assert result.content == "alpha\ngamma"


def test_stdin_template_feeds_jq(ctx: RuntimeContext) -> None:
    text = """\
name: jq_field
description: Pick a field of a JSON document.
parameters:
  type: object
  properties:
    document: {type: string}
    field: {type: string}
    extra: {type: array}
  required: [document, field]
stdin: '{{"doc": {document}, "extra": {extra}}}'
command: [/usr/bin/jq, -c, --arg, field, "{field}", '.doc[$field], .extra']
"""
    result = run(ctx, text, {"document": '{"name": "nami", "size": 3}', "field": "name", "extra": [1, "x"]})
    assert result.ok, result.content
    assert result.content.splitlines() == ['"nami"', '[1,"x"]']


def test_without_a_stdin_template_stdin_is_closed(ctx: RuntimeContext) -> None:
    text = "name: cat_stdin\ndescription: d\ncommand: [PYTHON, -c, 'import sys;print(repr(sys.stdin.read()))']\n"
    result = run(ctx, text, {})
    assert result.ok and result.content == "''"


def test_env_with_host_reference(ctx: RuntimeContext, temp_home: Path) -> None:
    text = f"name: env_home\ndescription: d\nenv: {{WHERE: 'home=${{HOME}}', COUNT: 3, FLAG: true}}\ncommand: [{ENVIRON}, WHERE, COUNT, FLAG]\n"
    result = run(ctx, text, {})
    assert result.ok, result.content
    assert json.loads(result.content) == {"WHERE": f"home={temp_home}", "COUNT": "3", "FLAG": "true"}


def _with_host(ctx: RuntimeContext, **extra: str) -> RuntimeContext:
    return dataclasses.replace(ctx, host_env={**ctx.host_env, **extra})


def test_env_referring_to_a_secret_is_refused_unless_passed_through(ctx: RuntimeContext) -> None:
    ctx = _with_host(ctx, DEPLOY_TOKEN="s3cret")
    text = f"name: deploy\ndescription: d\nenv: {{AUTH: '${{DEPLOY_TOKEN}}'}}\ncommand: [{ENVIRON}, AUTH, DEPLOY_TOKEN]\n"
    refused = run(ctx, text, {})
    assert not refused.ok
    assert refused.content == ("Error: deploy: env refers to ${DEPLOY_TOKEN}, which looks secret; "
                               "list it in env_passthrough to allow it")
    allowed = run(ctx, text + "env_passthrough: [DEPLOY_TOKEN]\n", {})
    assert allowed.ok, allowed.content
    assert json.loads(allowed.content) == {"AUTH": "s3cret", "DEPLOY_TOKEN": "s3cret"}


def test_secret_looking_host_variables_are_scrubbed(ctx: RuntimeContext) -> None:
    ctx = _with_host(ctx, DEPLOY_TOKEN="s3cret", PLAIN_SETTING="visible")
    text = f"name: show\ndescription: d\ncommand: [{ENVIRON}, DEPLOY_TOKEN, PLAIN_SETTING, PAGER]\n"
    assert json.loads(run(ctx, text, {}).content) == {"DEPLOY_TOKEN": None, "PLAIN_SETTING": "visible",
                                                      "PAGER": "cat"}


def test_protected_variables_never_reach_a_tool(ctx: RuntimeContext) -> None:
    ctx = dataclasses.replace(_with_host(ctx, OPENAI_API_KEY="sk-model"), protected_env=frozenset({"OPENAI_API_KEY"}))
    referring = (f"name: leak\ndescription: d\nenv: {{K: '${{OPENAI_API_KEY}}'}}\nenv_passthrough: [OPENAI_API_KEY]\n"
                 f"command: [{ENVIRON}, K]\n")
    result = run(ctx, referring, {})
    assert not result.ok
    assert result.content == "Error: leak: env refers to ${OPENAI_API_KEY}, which is never given to tools"
    setting = f"name: leak\ndescription: d\nenv: {{OPENAI_API_KEY: x}}\ncommand: [{ENVIRON}, K]\n"
    assert run(ctx, setting, {}).content == "Error: leak: env sets OPENAI_API_KEY, which is never given to tools"
    passthrough = f"name: leak\ndescription: d\nenv_passthrough: [OPENAI_API_KEY]\ncommand: [{ENVIRON}, OPENAI_API_KEY]\n"
    assert json.loads(run(ctx, passthrough, {}).content) == {"OPENAI_API_KEY": None}


def test_env_referring_to_an_unset_variable_is_refused(ctx: RuntimeContext) -> None:
    text = f"name: e\ndescription: d\nenv: {{X: '${{NAMI_TEST_SURELY_UNSET}}'}}\ncommand: [{ENVIRON}, X]\n"
    assert run(ctx, text, {}).content == "Error: e: env refers to ${NAMI_TEST_SURELY_UNSET}, which is not set"


CWD = 'PYTHON, -c, "import os;print(os.getcwd())"'


def test_cwd_inside_the_workspace(ctx: RuntimeContext) -> None:
    (ctx.workspace / "sub" / "dir").mkdir(parents=True)
    result = run(ctx, f"name: where\ndescription: d\ncwd: sub/dir\ncommand: [{CWD}]\n", {})
    assert result.ok, result.content
    assert Path(result.content) == ctx.workspace / "sub" / "dir"
    default = run(ctx, f"name: where\ndescription: d\ncommand: [{CWD}]\n", {})
    assert Path(default.content) == ctx.workspace


@pytest.mark.parametrize("cwd", ["../", "sub/../.."])
def test_cwd_escaping_the_workspace_is_refused_at_load(ctx: RuntimeContext, cwd: str) -> None:
    path = ctx.workspace.parent / "tool.yaml"
    path.write_text(f"name: where\ndescription: d\ncwd: '{cwd}'\ncommand: [{CWD}]\n".replace("PYTHON", sys.executable))
    tools, problems = load_tools([path])
    assert tools == []
    assert [p.message for p in problems] == [f"cwd '{cwd}' leaves the workspace; it must be a folder inside it"]


def test_cwd_escaping_the_workspace_through_a_link_is_refused_at_run(ctx: RuntimeContext) -> None:
    (ctx.workspace / "link_out").symlink_to(ctx.workspace.parent)
    result = run(ctx, f"name: where\ndescription: d\ncwd: link_out\ncommand: [{CWD}]\n", {})
    assert not result.ok
    assert "the tool's cwd 'link_out' is outside the workspace" in result.content


def test_missing_cwd_is_refused(ctx: RuntimeContext) -> None:
    result = run(ctx, f"name: where\ndescription: d\ncwd: nope\ncommand: [{CWD}]\n", {})
    assert result.content.startswith("Error: where: the tool's cwd 'nope' is not a folder in the workspace")


def test_timeout_kills_the_tool(ctx: RuntimeContext) -> None:
    text = "name: slow\ndescription: d\ntimeout: 1\ncommand: [PYTHON, -c, 'import time; time.sleep(30)']\n"
    result = run(ctx, text, {})
    assert not result.ok and result.details["timed_out"]
    assert "[timed out after 1 s" in result.content


def test_exit_code_and_stderr_are_reported(ctx: RuntimeContext) -> None:
    text = "name: fails\ndescription: d\ncommand: [PYTHON, -c, 'import sys; print(\"out\"); sys.exit(\"bad thing\")']\n"
    result = run(ctx, text, {})
    assert not result.ok
    assert result.content == "out\n[stderr]\nbad thing\n[exit code: 1]"


def test_max_output_caps_what_the_model_sees(ctx: RuntimeContext) -> None:
    text = "name: loud\ndescription: d\nmax_output: 300\ncommand: [PYTHON, -c, 'print(\"x\" * 100000)']\n"
    result = run(ctx, text, {})
    assert result.ok
    assert len(result.content) < 1000
    assert result.details["truncated"]
    spill = Path(result.details["spill_path"])
    assert spill.read_text().strip() == "x" * 100000


def test_describe_and_plan_show_the_exact_argv(ctx: RuntimeContext) -> None:
    ex = tool_executor(ctx, ECHO_VALUE.replace("PYTHON", sys.executable))
    prepared = ex.prepare("echo_value", {"value": "a b"})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.plan()["argv"][-2:] == ["a b", "prefix:a b"]
    assert prepared.describe().endswith("'a b' 'prefix:a b'")
    assert prepared.plan()["stdin"] is None
