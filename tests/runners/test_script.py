"""``script:`` tools run real bash: arguments are environment variables, never script text."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.result import ToolResult
from nami_yaml.runners.script import parameter_name_problem
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor


def run(ctx: RuntimeContext, text: str, args: dict | str) -> ToolResult:
    ex = tool_executor(ctx, text)
    return ex.execute(ex.registry.names()[0], args)


REPORT = """\
name: report
description: Report its arguments.
parameters:
  type: object
  properties:
    name: {type: string}
    count: {type: integer, default: 3}
    verbose: {type: boolean}
    items: {type: array, items: {type: string}}
    ratio: {type: number}
  required: [name]
script: |
  printf 'name=%s\\n' "$name"
  printf 'count=%s\\n' "$count"
  printf 'verbose=%s\\n' "${verbose-unset}"
  printf 'items=%s\\n' "${items-unset}"
  printf 'ratio=%s\\n' "${ratio-unset}"
  printf 'args=%s\\n' "$NAMI_ARGS"
"""


def parse(content: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in content.splitlines())


def test_arguments_arrive_as_variables_by_name(ctx: RuntimeContext) -> None:
    result = run(ctx, REPORT, {"name": "nami", "verbose": True, "items": ["a b", "c"], "ratio": 0.5})
    assert result.ok, result.content
    values = parse(result.content)
    assert values["name"] == "nami"
    assert values["count"] == "3"  # the default, applied before the script runs
    assert values["verbose"] == "true"
    assert json.loads(values["items"]) == ["a b", "c"]  # arrays arrive as JSON text
    assert values["ratio"] == "0.5"
    assert json.loads(values["args"]) == {"name": "nami", "count": 3, "verbose": True, "items": ["a b", "c"],
                                          "ratio": 0.5}


def test_absent_optional_parameters_are_unset(ctx: RuntimeContext) -> None:
    values = parse(run(ctx, REPORT, {"name": "x"}).content)
    assert (values["verbose"], values["items"], values["ratio"]) == ("unset", "unset", "unset")
    assert json.loads(values["args"]) == {"name": "x", "count": 3}


@pytest.mark.parametrize("value", ["$(touch pwned)", "`touch pwned`", "; touch pwned", "| touch pwned",
                                   "&& touch pwned", "a\nb", "'quote\"s", "*"])
def test_hostile_values_are_data_not_code(ctx: RuntimeContext, value: str) -> None:
    (ctx.workspace / "some_file").write_text("x")
    text = ("name: echo\ndescription: d\nparameters: {type: object, properties: {v: {type: string}}, required: [v]}\n"
            "script: printf '%s' \"$v\"\n")
    result = run(ctx, text, {"v": value})
    assert result.ok, result.content
    assert result.content == value.rstrip()
    assert not (ctx.workspace / "pwned").exists()


def test_nul_is_refused(ctx: RuntimeContext) -> None:
    result = run(ctx, REPORT, '{"name": "a\\u0000b"}')
    assert not result.ok
    assert result.content == ("Error: report: a value contains a NUL byte, which cannot be passed in an "
                              "environment variable")


@pytest.mark.parametrize(("name", "ok"), [
    ("path", True), ("branch_name", True), ("PATH", False), ("IFS", False), ("BASH_ENV", False),
    ("BASH_FUNC_x%%", False), ("LD_PRELOAD", False), ("NAMI_ARGS", False), ("SHELLOPTS", False), ("PS4", False),
    ("my-file", False), ("1st", False), ("naïve", False),
    # Found by a review: each of these steers a program the script runs, and all loaded.
    ("http_proxy", False), ("https_proxy", False), ("HTTPS_PROXY", False), ("ALL_PROXY", False),
    ("no_proxy", False), ("Http_Proxy", False), ("GLIBC_TUNABLES", False), ("GCONV_PATH", False),
    ("PYTHONHOME", False), ("PYTHONWARNINGS", False), ("PYTHONBREAKPOINT", False), ("PERLLIB", False),
    ("RUBYLIB", False), ("JAVA_TOOL_OPTIONS", False), ("TMOUT", False), ("LOCPATH", False), ("NLSPATH", False),
    ("KUBECONFIG", False), ("X", False), ("_", False), ("__", False), ("A1", False),
    # Plain names: a lower-case letter, and not a proxy variable.
    ("podName", True), ("x", True), ("_private", True), ("ref2", True), ("proxy", True), ("proxy_url", True),
])
def test_parameter_names_that_cannot_be_variables(name: str, ok: bool) -> None:
    assert (parameter_name_problem(name) is None) is ok


def test_a_proxy_parameter_cannot_reroute_the_script(tmp_path: Path) -> None:
    """A `http_proxy` parameter would send the script's curl (or Python's urllib) through the model's proxy."""
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ndescription: d\nparameters: {type: object, properties: {http_proxy: {type: string}}}\n"
                    "script: python3 -c 'import urllib.request; print(urllib.request.getproxies())'\n")
    tools, problems = load_tools([path])
    assert tools == []
    assert [p.message for p in problems] == [
        "parameter 'http_proxy' would set the proxy variable http_proxy, which reroutes the network traffic "
        "of the programs the script runs; rename it"]


def test_clobbering_names_are_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("name: t\ndescription: d\nparameters: {type: object, properties: {IFS: {type: string}}}\n"
                    "script: echo\n")
    tools, problems = load_tools([path])
    assert tools == []
    assert [p.message for p in problems] == [
        "parameter 'IFS' would set the environment variable IFS; only names with a lower-case letter become "
        "variables (programs read capitalised ones: PATH, LD_PRELOAD, PYTHONHOME, ...); rename it"
    ]


def test_extra_arguments_with_dangerous_names_are_not_exported(ctx: RuntimeContext) -> None:
    """With additionalProperties the model picks the names: PATH, SHELLOPTS+PS4, LD_PRELOAD or XDG_CONFIG_HOME
    would steer what the script runs, so extra keys only arrive in $NAMI_ARGS."""
    text = """\
name: loose
description: d
parameters: {type: object, additionalProperties: true}
script: |
  printf 'path_ok=%s\\n' "$(command -v cat >/dev/null && echo yes)"
  printf 'mode=%s\\n' "${mode-unset}"
  printf 'preload=%s\\n' "${LD_PRELOAD-unset}"
  printf 'xdg=%s\\n' "${XDG_CONFIG_HOME-unset}"
  printf 'args=%s\\n' "$NAMI_ARGS"
"""
    args = {"mode": "fast", "PATH": "/nonexistent", "SHELLOPTS": "xtrace", "PS4": "$(touch pwned)",
            "LD_PRELOAD": "/nonexistent.so", "NAMI_ARGS": "hijacked", "XDG_CONFIG_HOME": "vendor/cfg"}
    result = run(ctx, text, args)
    assert result.ok, result.content
    values = parse(result.content)
    assert values["path_ok"] == "yes"
    assert values["mode"] == "unset"  # undeclared: not a variable, whatever its name
    assert values["xdg"] != "vendor/cfg"
    assert values["preload"] == "unset"
    assert json.loads(values["args"]) == args  # everything stays available as JSON
    assert not (ctx.workspace / "pwned").exists()


def test_bash_env_from_the_host_is_not_sourced(ctx: RuntimeContext, tmp_path: Path) -> None:
    marker = tmp_path / "sourced"
    rc = tmp_path / "rc.sh"
    rc.write_text(f"touch {marker}\n")
    ctx = dataclasses.replace(ctx, host_env={**ctx.host_env, "BASH_ENV": str(rc), "ENV": str(rc)})
    text = "name: plain\ndescription: d\nscript: printf '%s|%s' \"${BASH_ENV-unset}\" \"${ENV-unset}\"\n"
    result = run(ctx, text, {})
    assert result.ok, result.content
    assert result.content == "unset|unset"
    assert not marker.exists()


def test_tool_env_and_stdin_work_for_scripts(ctx: RuntimeContext, temp_home: Path) -> None:
    text = """\
name: piped
description: d
parameters: {type: object, properties: {body: {type: string}}, required: [body]}
env: {GREETING: "hi from ${HOME}"}
stdin: "{body}"
script: |
  printf '%s\\n' "$GREETING"
  tr a-z A-Z
"""
    result = run(ctx, text, {"body": "shout $(id)"})
    assert result.ok, result.content
    assert result.content == f"hi from {temp_home}\nSHOUT $(ID)"


def test_failure_exit_code_and_tool_name_in_errors(ctx: RuntimeContext) -> None:
    result = run(ctx, "name: broken\ndescription: d\nscript: |\n  no_such_command_here\n  exit 3\n", {})
    assert not result.ok
    assert "broken: line 1: no_such_command_here: command not found" in result.content
    assert result.content.endswith("[exit code: 3]")
    assert result.details["exit_code"] == 3


def test_describe_names_the_tool_and_arguments(ctx: RuntimeContext) -> None:
    prepared = tool_executor(ctx, REPORT).prepare("report", {"name": "x"})
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.describe() == 'report (bash script) name="x" count=3'
    plan = prepared.plan()
    assert plan["argv"][1:4] == ["--noprofile", "--norc", "-c"]
    assert plan["argv"][4].startswith("printf 'name=%s\\n' \"$name\"\n")
    assert plan["argv"][5] == "report"
    assert plan["env_set"]["name"] == "x" and json.loads(plan["env_set"]["NAMI_ARGS"]) == {"name": "x", "count": 3}


FIND = """\
name: find_files
description: Find files under a path.
parameters:
  type: object
  properties:
    path: {type: string}
    offset: {type: integer}
  required: [path]
script: |
  find "$path" -maxdepth 0 -printf 'found %p\\n'
  echo "offset=${offset-none}"
"""


def test_a_script_tool_refuses_a_value_that_would_be_an_option(ctx: RuntimeContext) -> None:
    # The dash rule of command: tools holds for scripts: `find "$path"` takes path=-ls as an option.
    (ctx.workspace / "a").mkdir()
    refused = run(ctx, FIND, {"path": "-ls"})
    assert not refused.ok
    assert "'path' starts with '-'" in refused.content and "found" not in refused.content
    assert not run(ctx, FIND, {"path": "a", "offset": -3}).ok  # a negative number is a dash too
    ran = run(ctx, FIND, {"path": "a"})
    assert ran.ok and ran.content.splitlines()[0] == "found a", ran.content


def test_allow_dash_lets_a_scripts_parameter_start_with_a_dash(ctx: RuntimeContext) -> None:
    text = FIND + "allow_dash: [offset]\n"
    ran = run(ctx, text, {"path": "a", "offset": -3})
    assert "offset=-3" in ran.content
    assert not run(ctx, text, {"path": "-ls"}).ok  # only the parameters it lists


def test_nami_check_names_a_scripts_enum_value_that_could_never_pass(tmp_path: Path) -> None:
    from nami_yaml.registry.loader import check_tools

    path = tmp_path / "sort.yaml"
    path.write_text("name: sorted_files\ndescription: d\nparameters:\n  type: object\n  properties:\n"
                    "    order: {type: string, enum: [name, -mtime]}\nscript: ls --sort=\"$order\"\n")
    _, problems = check_tools([path])
    assert [f"{p.line}:{p.col}: {p.path}: {p.message}" for p in problems if p.is_error] == [
        "6:40: $.parameters.properties.order.enum[1]: enum value \"-mtime\" starts with '-', so a script "
        "tool always refuses it (it would reach the script's programs as an option); list 'order' in allow_dash "
        "if it may"]
    path.write_text(path.read_text() + "allow_dash: [order]\n")
    assert [p for p in check_tools([path])[1] if p.is_error] == []


def test_host_env_false_keeps_the_hosts_variables_from_a_tool(ctx: RuntimeContext) -> None:
    ctx = dataclasses.replace(ctx, host_env={**ctx.host_env, "REGION": "eu", "MY_TOKEN_SETTING": "x", "LANG": "C.UTF-8"})
    text = ("name: show_env\ndescription: d\nhost_env: false\nenv_passthrough: [REGION]\nenv: {FIXED: yes}\n"
            "script: env | cut -d= -f1 | sort\n")
    names = set(run(ctx, text, {}).content.split())
    assert {"PATH", "LANG", "REGION", "FIXED"} <= names  # the few any program needs, what the tool lists
    assert not {"HOME", "MY_TOKEN_SETTING", "USER", "XDG_CONFIG_HOME"} & names
    everything = set(run(ctx, text.replace("host_env: false\n", ""), {}).content.split())
    assert "HOME" in everything  # by default a tool sees the host's variables (secrets scrubbed)


def test_the_dash_rule_holds_for_items_and_after_white_space(ctx: RuntimeContext) -> None:
    """Red team: an array's items (`jq -r '.[]'`) and " -la" (an unquoted "$path" drops the space) passed."""
    text = FIND.replace("    offset: {type: integer}", "    offset: {type: integer}\n    more: {type: array, items: {type: string}}")
    assert not run(ctx, text, {"path": " -ls"}).ok
    refused = run(ctx, text, {"path": "a", "more": ["b", "-delete"]})
    assert not refused.ok and "'-delete'" in refused.content
    assert run(ctx, text, {"path": "a", "more": ["b", "c-d"]}).ok
