"""Loading tool files into Tools: what is accepted, what is refused, and what loading never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.errors import SpecError
from nami_yaml.registry.loader import Host, check_tools, load_tool_file, load_tools
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.entrypoint import EntrypointRunner
from nami_yaml.runners.script import ScriptRunner
from tests.helpers import write


def messages(folder: Path, text: str) -> list[str]:
    _, problems = load_tool_file(write(folder / "t.yaml", text))
    return [f"{p.path}: {p.message}" for p in problems]


GREP = """\
name: search
description: |
  Search files for a pattern.
risk: read
parameters:
  type: object
  properties:
    pattern: {type: string}
    ignore_case: {type: boolean}
    max: {type: integer, default: 50}
  required: [pattern]
command: [grep, -rn, "--max-count={max}", [-i, "{ignore_case}"], --, "{pattern}", "."]
timeout: 5
"""


def test_a_command_tool_loads_with_its_settings(workdir: Path) -> None:
    path = write(workdir / "grep.yaml", GREP)
    (tool,), problems = load_tool_file(path)
    assert problems == []
    assert tool.name == "search"
    assert tool.description == "Search files for a pattern."
    assert tool.risk == "read"
    assert tool.source == "grep.yaml:1:1"
    assert not tool.builtin
    assert isinstance(tool.runner, CommandRunner)
    assert tool.runner.options.timeout == 5
    # Unknown argument keys are refused unless the author says otherwise, and the model is told so.
    assert tool.parameters["additionalProperties"] is False
    assert tool.definition() == {
        "type": "function",
        "function": {"name": "search", "description": "Search files for a pattern.", "parameters": tool.parameters},
    }


def test_defaults_of_a_minimal_tool(workdir: Path) -> None:
    path = write(workdir / "t.yaml", "name: t\ndescription: d\nscript: 'true'\n")
    (tool,), problems = load_tool_file(path)
    assert problems == []
    assert tool.risk == "exec"
    assert isinstance(tool.runner, ScriptRunner)
    assert tool.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_explicit_additional_properties_is_kept(workdir: Path) -> None:
    path = write(workdir / "t.yaml", "name: t\ndescription: d\nparameters: {type: object, additionalProperties: true}\n"
                                    "command: [echo]\n")
    (tool,), _ = load_tool_file(path)
    assert tool.parameters["additionalProperties"] is True


def test_a_tools_list_keeps_declaration_order(workdir: Path) -> None:
    text = "tools:\n" + "".join(f"  - {{name: t{i}, description: d, command: [echo, '{i}']}}\n" for i in (3, 1, 2))
    tools, problems = load_tool_file(write(workdir / "many.yaml", text))
    assert problems == []
    assert [t.name for t in tools] == ["t3", "t1", "t2"]
    assert [t.source for t in tools] == ["many.yaml:2:5", "many.yaml:3:5", "many.yaml:4:5"]


def test_the_good_tools_of_a_file_still_load_when_another_is_broken(workdir: Path) -> None:
    text = "tools:\n  - {name: good, description: d, command: [echo]}\n  - {name: bad, description: d}\n"
    tools, problems = load_tool_file(write(workdir / "t.yaml", text))
    assert [t.name for t in tools] == ["good"]
    assert [p.path for p in problems] == ["$.tools[1]"]


def test_keys_next_to_tools_are_refused(workdir: Path) -> None:
    text = "risk: read\ntools:\n  - {name: a, description: d, command: [echo]}\n"
    assert messages(workdir, text) == ["$.risk: unknown key 'risk' next to `tools:`; put it inside a tool of the list, "
                                          "or in `defaults:` for all of them"]
    assert messages(workdir, "tools: []\n") == ["$.tools: `tools:` must be a non-empty list of tools"]


def test_a_schema_key_for_editors_is_allowed_and_ignored(workdir: Path) -> None:
    listed = "$schema: ../s.json\ntools:\n  - {name: a, description: d, command: [echo]}\n"
    single = "$schema: ../s.json\nname: b\ndescription: d\ncommand: [echo]\n"
    tools, problems = load_tools([write(workdir / "a.yaml", listed), write(workdir / "b.yaml", single)])
    assert problems == [] and [t.name for t in tools] == ["a", "b"]
    assert "$schema" not in tools[1].parameters


def test_a_file_that_is_not_a_mapping(workdir: Path) -> None:
    assert messages(workdir, "- a\n- b\n") == [
        "$: a tool file holds a tool (a mapping) or `tools:` with a list; found a list"
    ]


def test_an_unreadable_file_is_a_problem(workdir: Path) -> None:
    path = workdir / "bin.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    tools, problems = load_tool_file(path)
    assert tools == []
    assert len(problems) == 1 and problems[0].message.startswith("cannot read tool file:")


@pytest.mark.parametrize(("text", "expected"), [
    ("name: t\ndescription: d\nparameters: {type: object, properties: {ref: {type: string}}}\n"
     "allow_dash: [rf]\ncommand: [git, log, [\"{ref}\"]]\n",
     "$.allow_dash: allow_dash names 'rf', which is not a parameter; did you mean 'ref'?"),
    ("name: t\ndescription: d\ncwd: /etc\ncommand: [ls]\n",
     "$.cwd: cwd is a fixed folder relative to the workspace (no placeholders, not absolute)"),
    ("name: t\ndescription: d\nparameters: {type: object, properties: {d: {type: string}}, required: [d]}\n"
     "cwd: '{d}'\ncommand: [ls, '{d}']\n",
     "$.cwd: cwd is a fixed folder relative to the workspace (no placeholders, not absolute)"),
    ("name: t\ndescription: d\nparameters: {type: object, properties: {ctx: {type: string}}}\n"
     "entrypoint: m:f\n",
     "$.parameters.properties.ctx: 'ctx' is reserved for entry points: it receives nami's runtime context"),
    ("name: t\ndescription: d\ncommand: [ls, [--all]]\n",
     "$.command[1]: an optional group needs a {parameter} of its own that switches it on"),
    ("name: t\ndescription: d\nstdin: '{body}'\ncommand: [cat]\n",
     "$.stdin: placeholder {body} names no parameter (declared: none); or, for the program to get {body} "
     "itself, write {{body}} (braces are escaped by doubling)"),
    ("name: t\ndescription: d\nparameters: {type: object, required: [x]}\ncommand: [echo]\n",
     "$.parameters.required: required parameter 'x' is not declared in properties"),
    ("name: t\ndescription: d\nenv: {MY-VAR: x}\ncommand: [env]\n",
     "$.env: \"MY-VAR\" must be a variable name (letters, digits and _, not starting with a digit)"),
    ("name: t\ndescription: d\ncommand: [echo, true]\n",
     "$.command[1]: expected string, got boolean true"),
])
def test_load_time_refusals(workdir: Path, text: str, expected: str) -> None:
    assert expected in messages(workdir, text)


def test_required_parameter_used_only_by_stdin_is_used(workdir: Path) -> None:
    text = ("name: t\ndescription: d\nparameters: {type: object, properties: {doc: {type: string}}, required: [doc]}\n"
            "stdin: '{doc}'\ncommand: [jq, .]\n")
    assert messages(workdir, text) == []


def test_an_optional_group_switched_by_a_nested_group_alone_is_refused(workdir: Path) -> None:
    text = ("name: t\ndescription: d\nparameters: {type: object, properties: {a: {type: string}}}\n"
            "command: [echo, [--outer, [--inner, '{a}']]]\n")
    assert messages(workdir, text) == [
        "$.command[1]: an optional group needs a {parameter} of its own that switches it on"
    ]


def test_loading_an_entrypoint_imports_nothing(workdir: Path) -> None:
    path = write(workdir / "t.yaml", "name: t\ndescription: d\nentrypoint: no_such_module_anywhere:run\n")
    (tool,), problems = load_tool_file(path)
    assert problems == []
    assert isinstance(tool.runner, EntrypointRunner)
    assert tool.runner.base_dir == workdir.resolve()


def test_load_tools_marks_builtins_and_keeps_file_order(workdir: Path) -> None:
    first = write(workdir / "z.yaml", "name: zed\ndescription: d\ncommand: [echo]\n")
    second = write(workdir / "a.yaml", "name: ay\ndescription: d\ncommand: [echo]\n")
    tools, problems = load_tools([first, second], builtin=[first])
    assert problems == []
    assert [(t.name, t.builtin) for t in tools] == [("zed", True), ("ay", False)]


RICH_PARAMETERS = """\
name: rich
description: d
parameters:
  type: object
  properties:
    mode: {type: string, enum: [fast, slow], default: fast, description: How.}
    paths: {type: array, items: {type: string}, minItems: 1}
    depth: {type: [integer, "null"], minimum: 0}
    opts:
      type: object
      properties: {dry: {type: boolean}}
  required: [paths]
command: [echo, "{mode}", "{paths}", [--depth, "{depth}"]]
"""


def test_parameters_reach_the_model_exactly_as_written(workdir: Path) -> None:
    """Validation must not write anything into the schema (a default-filling validator once did)."""
    import yaml

    (tool,), problems = load_tool_file(write(workdir / "rich.yaml", RICH_PARAMETERS))
    assert problems == []
    written = yaml.safe_load(RICH_PARAMETERS)["parameters"]
    assert tool.parameters == {**written, "additionalProperties": False}


@pytest.mark.parametrize(("parameters", "fragment"), [
    # 2020-12 keywords whose draft-7 meaning differs must still be checked by the full validator
    ("{type: object, properties: {a: {type: array, prefixItems: 5}}}", "properties.a.prefixItems"),
    ("{type: object, properties: {a: {type: array, items: [{type: string}]}}}", "properties.a.items"),
    ("{type: object, properties: {a: {$ref: 7}}}", "properties.a['$ref']"),
    ("{type: object, properties: {a: {minLength: -1}}}", "properties.a.minLength"),
])
def test_invalid_parameter_schemas_are_caught(workdir: Path, parameters: str, fragment: str) -> None:
    text = f"name: t\ndescription: d\nparameters: {parameters}\nentrypoint: m:f\n"
    found = messages(workdir, text)
    assert any(line.startswith(f"$.parameters.{fragment}: not a valid JSON Schema") for line in found), found


def findings(folder: Path, text: str, host: Host | None = None) -> list[str]:
    _, problems = check_tools([write(folder / "t.yaml", text)], host=host)
    return [f"{p.path}: {p.severity}: {p.message}" for p in SpecError(problems).problems]  # in file order


def test_a_warning_does_not_stop_the_tool_from_loading(workdir: Path) -> None:
    text = ("name: t\ndescription: d\nparameters: {type: object, properties: {unused: {type: string}}}\n"
            "command: [echo]\n")
    tools, errors = load_tools([write(workdir / "t.yaml", text)])
    assert [t.name for t in tools] == ["t"] and errors == []
    loaded, problems = check_tools([workdir / "t.yaml"])
    assert [t.name for t in loaded] == ["t"]
    assert [(p.severity, str(p)) for p in problems] == [
        ("warning", "t.yaml:3:41: $.parameters.properties.unused: warning: parameter 'unused' is never used by "
                    "the command or stdin")]


def test_parameters_a_script_or_entry_point_may_use_are_not_reported(workdir: Path) -> None:
    params = "parameters: {type: object, properties: {a: {type: string}, b: {type: integer}}}\n"
    assert findings(workdir, f"name: t\ndescription: d\n{params}script: echo \"$a\" $((b + 1))\n") == []
    assert findings(workdir, f"name: t\ndescription: d\n{params}script: jq .a <<<\"$NAMI_ARGS\"\n") == []
    assert findings(workdir, f"name: t\ndescription: d\n{params}entrypoint: m:f\n") == []
    assert findings(workdir, f"name: t\ndescription: d\n{params}stdin: '{{a}} {{b}}'\ncommand: [cat]\n") == []


def test_own_values_are_checked_through_refs_and_nested_objects(workdir: Path) -> None:
    text = """\
name: t
description: d
parameters:
  type: object
  $defs:
    level: {type: string, enum: [info, warn]}
  properties:
    level: {$ref: "#/$defs/level", default: debug}
    filter:
      type: object
      properties:
        since: {type: integer, minimum: 0, default: -5}
      default: {since: 1}
    remote: {$ref: "https://example.com/schema.json", default: 1}
command: [app, [--level, "{level}"]]
stdin: "{filter} {remote}"
"""
    assert findings(workdir, text) == [
        "$.parameters.properties.level.default: error: default \"debug\" is not valid for this parameter: "
        "\"debug\" is not one of: \"info\", \"warn\"",
        "$.parameters.properties.filter.properties.since.default: error: default -5 is not valid for this "
        "parameter: -5 is less than the minimum of 0",
        # A remote reference is refused outright (issue 10): its default is never checked against it.
        "$.parameters.properties.remote['$ref']: error: $ref 'https://example.com/schema.json' points outside "
        "this schema; only local references (#/...) are allowed, so validating arguments never reads a file or "
        "the network",
    ]


def test_a_dash_value_is_fine_where_it_cannot_start_an_argument_or_is_allowed(workdir: Path) -> None:
    base = ("name: t\ndescription: d\nparameters: {type: object, properties: {n: {type: integer, default: -1, "
            "enum: [-1, 1]}}}\n")
    assert findings(workdir, base + "command: [head, '--lines={n}']\n") == []
    assert findings(workdir, base + "allow_dash: [n]\ncommand: [head, -n, '{n}']\n") == []
    assert findings(workdir, base + "command: [head, -n, '{n}']\n") == [
        "$.parameters.properties.n.default: error: default -1 starts with '-', so it is always refused where {n} "
        "starts an argument ($.command[2]); list 'n' in allow_dash if it may",
        "$.parameters.properties.n.enum[0]: error: enum value -1 starts with '-', so it is always refused where "
        "{n} starts an argument ($.command[2]); list 'n' in allow_dash if it may",
    ]


def test_the_item_of_a_repeated_group_may_fill_part_of_an_element(workdir: Path) -> None:
    text = ("name: t\ndescription: d\nparameters: {type: object, properties: {names: {type: array, "
            "items: {type: string}}}}\ncommand: [find, ., '(', -false, [-o, -name, '{names}', '--x={names}'], ')']\n")
    assert findings(workdir, text) == []


def test_a_broken_runner_does_not_hide_the_other_problems(workdir: Path) -> None:
    text = ("name: t\ndescription: d\nparameters: {type: object, properties: {a: {type: boolean, default: 1}}}\n"
            "comand: [echo, '{b}']\ncwd: ../x\n")
    assert findings(workdir, text) == [
        "$: error: missing runner: a tool needs one of command, pipeline, script or entrypoint",
        "$.parameters.properties.a: warning: parameter 'a' is never used by the command or stdin",
        "$.parameters.properties.a.default: error: default 1 is not valid for this parameter: expected boolean, "
        "got integer 1",
        "$.comand: error: unknown key 'comand'; did you mean 'command'?",
        "$.comand[1]: error: placeholder {b} names no parameter (declared: a)",
        "$.cwd: error: cwd '../x' leaves the workspace; it must be a folder inside it",
    ]


def test_host_checks_find_programs_and_folders(workdir: Path) -> None:
    (workdir / "bin").mkdir()
    stub = write(workdir / "bin/tool", "#!/bin/sh\n")
    stub.chmod(0o755)
    write(workdir / "not-executable", "")
    (workdir / "ops").mkdir()
    (workdir / "out").symlink_to(workdir.parent)
    host = Host(workdir, str(workdir / "bin"))
    ok = "name: t\ndescription: d\ncwd: ops\ncommand: [tool]\n"
    assert findings(workdir, ok, host) == []
    assert findings(workdir, ok) == []
    assert findings(workdir, "name: t\ndescription: d\ncwd: out\ncommand: ['{x}']\n"
                             "parameters: {type: object, properties: {x: {type: string}}, required: [x]}\n", host) == [
        "$.cwd: warning: cwd 'out' leads outside the workspace (.) through a link; the tool will refuse to run"]
    assert findings(workdir, f"name: t\ndescription: d\ncommand: [{workdir / 'not-executable'}]\n", host) == [
        "$.command[0]: warning: program "
        f"{workdir / 'not-executable'} is not an executable file here (not-executable)"]


def test_builtins_pass_every_schema_check_the_loader_skips_for_them() -> None:
    """nami's own tool files are part of its code: loading them skips the two schema checks (compiling them
    is most of a start's tool loading), so this suite makes those checks, as for any file of a user's."""
    import subprocess
    import sys

    from nami_yaml.app.toolset import builtin_catalog

    for name, path in builtin_catalog().items():
        tools, problems = check_tools([path])  # not marked built-in: every check, warnings included
        assert problems == [] and [t.name for t in tools] == [name], (path, problems)
    probe = ("from nami_yaml.app.toolset import builtin_catalog\nfrom nami_yaml.registry.loader import load_tools\n"
             "from nami_yaml.spec import fastcheck\npaths = list(builtin_catalog().values())\n"
             "tools, problems = load_tools(paths, builtin=paths)\nassert not problems and len(tools) == len(paths)\n"
             "print(fastcheck._compiled_tool.cache_info().currsize, fastcheck._compiled_meta.cache_info().currsize)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "0"]  # nothing compiled for nami's own files
