"""``nami check`` and ``nami schema``; and the promise that the light commands never import openai."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from nami_yaml.config.settings import DEFAULT_BUILTINS
from tests.helpers import nami, write

GOLDEN = Path(__file__).resolve().parent.parent / "registry" / "golden"


def test_check_ok_prints_a_summary(workdir: Path) -> None:
    agent = write(workdir / "agent.yaml", "tools:\n  builtin: [read_file, bash]\n  files: [tools]\n")
    write(workdir / "tools" / "a.yaml", "name: a\ndescription: d\ncommand: [echo]\n")
    write(workdir / "tools" / "b.yaml", "tools:\n  - {name: b, description: d, script: 'true'}\n"
                                        "  - {name: c, description: d, entrypoint: 'm:f'}\n")
    result = nami("check")
    assert result.exit_code == 0, result.output
    # read_file and bash have docs, so tool_docs comes with them
    assert result.stdout == (f"ok: {agent}; 6 tools (3 built-in, 1 command, 1 entrypoint, 1 script) "
                             "from 2 tool files\n")


def test_check_without_agent_yaml_uses_defaults(workdir: Path) -> None:
    result = nami("check")
    assert result.exit_code == 0
    n = len(DEFAULT_BUILTINS) + 1  # and tool_docs, which reads their docs
    assert result.stdout == f"ok: no agent.yaml (defaults); {n} tools ({n} built-in) from 0 tool files\n"


def test_check_reports_every_problem_and_exits_1(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  builtin: []\n  files: [tools]\n")
    write(workdir / "tools" / "a.yaml", "name: a\ndescription: 5\ncomand: [echo]\n")
    write(workdir / "tools" / "b.yaml", "name: b\ndescription: d\ncommand: [echo, '{x}']\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "tools/a.yaml:1:1: $: missing runner: a tool needs one of command, pipeline, script or entrypoint\n"
        "tools/a.yaml:2:14: $.description: expected string, got integer 5\n"
        "tools/a.yaml:3:1: $.comand: unknown key 'comand'; did you mean 'command'?\n"
        "tools/b.yaml:3:17: $.command[1]: placeholder {x} names no parameter (declared: none); or, for the "
        "program to get {x} itself, write {{x}} (braces are escaped by doubling)\n"
        "4 problems found\n"
    )


def test_check_reports_a_bad_agent_yaml(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model:\n  nmae: x\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stderr == "agent.yaml:2:3: $.model.nmae: unknown key 'nmae'; did you mean 'name'?\n1 problem found\n"


def test_check_reports_unknown_builtin_and_missing_config(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [gerp]}\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stderr.startswith("agent.yaml:1:19: $.tools.builtin[0]: unknown built-in tool 'gerp'; "
                                    "did you mean 'grep'?; the built-in tools are bash, ")
    assert result.stderr.endswith("\n1 problem found\n")
    missing = nami("check", "--config", "nowhere.yaml")
    assert missing.exit_code == 1
    assert "nowhere.yaml, which is not a file" in missing.stderr


def test_every_kind_of_problem_comes_in_one_run_in_one_format(workdir: Path) -> None:
    """A newcomer fixes them all at once: no problem waits for another one to be fixed first."""
    write(workdir / "agent.yaml", "model:\n  temprature: 0.2\ntools:\n  builtin: [read_file, red_file]\n"
                                  "  library: [git, gti]\n  files: [tools/, missing/]\n")
    write(workdir / "tools" / "a.yaml", "name: a\ndescription: A.\ncommand: [echo, a]\n")
    write(workdir / "tools" / "a2.yaml", "name: a\ndescription: A again.\ncommand: [echo, a]\n")
    write(workdir / "tools" / "b.yaml", "name: b\ndescription: B.\ncomand: [echo, b]\n")
    result = nami("check", "nothing.yaml")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert [line.split(": ", 2)[:2] for line in lines[:-1]] == [
        ["agent.yaml:2:3", "$.model.temprature"],
        ["agent.yaml:4:24", "$.tools.builtin[1]"],
        ["agent.yaml:5:18", "$.tools.library[1]"],
        ["agent.yaml:6:19", "$.tools.files[1]"],
        ["nothing.yaml:1:1", "$"],
        ["tools/a2.yaml:1:7", "$.name"],
        ["tools/b.yaml:1:1", "$"],
        ["tools/b.yaml:3:1", "$.comand"],
    ]
    assert "unknown library group 'gti'; did you mean 'git'?" in lines[2]
    assert "'missing/' matches no tool file" in lines[3]
    assert "duplicate tool name 'a'" in lines[5]
    assert lines[-1] == "8 problems found"
    report = json.loads(nami("check", "nothing.yaml", "--json").stdout)
    assert report["errors"] == 8 and [p["path"] for p in report["problems"]][:2] == ["$.model.temprature",
                                                                                     "$.tools.builtin[1]"]


def test_what_is_left_after_a_setting_is_wrong_is_still_used(workdir: Path) -> None:
    """A wrong value leaves out that setting only: the rules beside it, and the tools, are still checked."""
    write(workdir / "agent.yaml", "workspace: nowhere\nsystem_file: no-prompt.md\nlimits: {max_steps: many}\n"
                                  "tools: {builtin: [], files: [t.yaml]}\n"
                                  "rules:\n  - {tool: nope, decision: allow}\n  - {tool: t, decision: perhaps}\n")
    write(workdir / "t.yaml", "name: t\ndescription: d\ncommand: [echo, t]\n")
    lines = nami("check").stderr.splitlines()
    assert [line.split(": ", 2)[1] for line in lines[:-1]] == [
        "$.workspace", "$.system_file", "$.limits.max_steps", "$.rules[0].tool", "$.rules[1].decision"]
    assert lines[-1] == "5 problems found"
    write(workdir / "t.yaml", "name: t\ndescription: d\ncommand: [echo, '{x}']\n")  # while a tool is broken,
    lines = nami("check").stderr.splitlines()  # no rule is said to name a tool that does not exist
    assert [line.split(": ", 2)[1] for line in lines[:-1]] == [
        "$.workspace", "$.system_file", "$.limits.max_steps", "$.rules[1].decision", "$.command[1]"]


@pytest.mark.parametrize("case", ["duplicate_name", "tools_bad_item", "script_clobber"])
def test_check_path_on_a_golden_folder(workdir: Path, case: str) -> None:
    shutil.copytree(GOLDEN / case, workdir / case)
    write(workdir / "agent.yaml", "tools: {builtin: []}\n")
    result = nami("check", case)
    assert result.exit_code == 1
    expected = [f"{case}/{line}" for line in (GOLDEN / case / "expected.txt").read_text().splitlines()]
    expected = [line.replace("at a.yaml:", f"at {case}/a.yaml:") for line in expected]
    count = len(expected)
    assert result.stderr.splitlines() == [*expected, f"{count} problem{'s' if count != 1 else ''} found"]


def test_check_path_on_a_good_folder(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: []}\n")
    write(workdir / "extra" / "deep" / "x.yml", "name: x\ndescription: d\ncommand: [echo]\n")
    result = nami("check", "extra")
    assert result.exit_code == 0
    assert result.stdout.endswith("; 1 tool (1 command) from 1 tool file\n")


@pytest.mark.parametrize("name", ["tool", "agent"])
def test_schema_prints_a_valid_draft_2020_12_schema(name: str) -> None:
    result = nami("schema", name)
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_tool_accepts_a_real_tool_and_rejects_a_broken_one() -> None:
    check = Draft202012Validator(json.loads(nami("schema", "tool").stdout))
    assert check.is_valid({"name": "t", "description": "d", "command": ["echo", ["-n", "{n}"]]})
    assert check.is_valid({"tools": [{"name": "t", "description": "d", "script": "true"}]})
    assert not check.is_valid({"name": "t", "description": "d", "comand": ["echo"]})
    assert not check.is_valid({"tools": [{"name": "t", "description": 5, "script": "x"}]})


def test_schema_rejects_unknown_names() -> None:
    assert nami("schema", "nope").exit_code == 2


NO_OPENAI = """\
import sys
from click.testing import CliRunner
from nami_yaml.cli.main import cli
from nami_yaml.config.settings import DEFAULT_BUILTINS
result = CliRunner().invoke(cli, sys.argv[1:])
assert result.exit_code == 0, result.output
loaded = sorted(m for m in sys.modules if m == "openai" or m.startswith("openai."))
print(",".join(loaded) or "none")
"""


@pytest.mark.parametrize("args", [["--help"], ["tools", "list"], ["tools", "list", "--json"], ["check"],
                                  ["schema", "tool"]])
def test_light_commands_do_not_import_openai(workdir: Path, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", NO_OPENAI, *args], cwd=workdir, env=dict(os.environ),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "none"


def test_real_nami_check_exit_codes(workdir: Path) -> None:
    script = shutil.which("nami") or str(Path(sys.executable).with_name("nami"))
    command = [script] if Path(script).exists() else [sys.executable, "-c",
                                                       "from nami_yaml.cli.main import main; main()"]
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", "name: t\ndescription: d\ncommand: [echo]\n")
    good = subprocess.run([*command, "check"], cwd=workdir, env=dict(os.environ), capture_output=True, text=True,
                          timeout=60)
    assert (good.returncode, good.stdout.startswith("ok: ")) == (0, True), good.stderr
    write(workdir / "t.yaml", "name: t\ndescription: d\n")
    bad = subprocess.run([*command, "check"], cwd=workdir, env=dict(os.environ), capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1
    assert bad.stderr == "t.yaml:1:1: $: missing runner: a tool needs one of command, pipeline, script or entrypoint\n" \
                         "1 problem found\n"


UNUSED_AND_MISSING = """\
name: pods
description: List pods.
parameters:
  type: object
  properties:
    namespace: {type: string, default: default}
    selector: {type: string}
command: [kubectl-not-installed-here, get, pods, --namespace, "{namespace}"]
"""


def test_warnings_are_shown_but_do_not_fail(workdir: Path) -> None:
    agent = write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", UNUSED_AND_MISSING)
    result = nami("check")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "t.yaml:7:5: $.parameters.properties.selector: warning: parameter 'selector' is never used by the command "
        "or stdin",
        "t.yaml:8:11: $.command[0]: warning: program 'kubectl-not-installed-here' is not found on PATH here "
        "(the machine that runs the tool needs it)",
    ]
    assert result.stdout == f"ok: {agent}; 1 tool (1 command) from 1 tool file; 2 warnings\n"


def test_strict_turns_warnings_into_failures(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", UNUSED_AND_MISSING)
    result = nami("check", "--strict")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == "2 warnings found (--strict)"


def test_errors_and_warnings_are_counted_apart(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", UNUSED_AND_MISSING.replace("default: default", "default: 5"))
    result = nami("check")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == ("t.yaml:6:40: $.parameters.properties.namespace.default: default 5 is not valid for this "
                        "parameter: expected string, got integer 5")
    assert lines[-1] == "1 problem and 2 warnings found"


BFCL_STYLE = """\
name: find_restaurants
description: Locate nearby restaurants.
parameters:
  type: object
  properties:
    location: {type: string}
    cuisine: {type: string, enum: [Italian, Chinese], default: N/A}
    price_range: {type: string, enum: [$, $$], default: null}
  required: [location]
"""


def test_a_refused_default_warns_for_an_entry_point_and_fails_a_script(workdir: Path) -> None:
    """Real-world schemas load (default: null is no default); a refused default is an error only where nami
    renders it, and --strict fails on the warning."""
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", BFCL_STYLE + "entrypoint: builtins:dict\n")
    warned = nami("check")
    assert warned.exit_code == 0, warned.output
    assert warned.stderr == ("t.yaml:7:64: $.parameters.properties.cuisine.default: warning: default \"N/A\" is not "
                             "valid for this parameter: \"N/A\" is not one of: \"Italian\", \"Chinese\"; nami does "
                             "not apply it, so a call that leaves it out passes no value\n")
    assert nami("check", "--strict").exit_code == 1
    write(workdir / "t.yaml", BFCL_STYLE + "script: echo \"$location $cuisine $price_range\"\n")
    failed = nami("check")
    assert failed.exit_code == 1
    assert failed.stderr.splitlines() == [
        "t.yaml:7:64: $.parameters.properties.cuisine.default: default \"N/A\" is not valid for this parameter: "
        "\"N/A\" is not one of: \"Italian\", \"Chinese\"", "1 problem found"]


def test_the_program_check_follows_path(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", "name: t\ndescription: d\ncommand: [my-tool, --version]\n")
    assert "not found on PATH" in nami("check").stderr
    stub = write(workdir / "bin" / "my-tool", "#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{workdir / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = nami("check", "--strict")
    assert (result.exit_code, result.stderr) == (0, "")


def test_check_json_lists_every_problem_with_its_position(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools]}\n")
    write(workdir / "tools" / "a.yaml", "name: a\ndescription: d\nrisk: reed\ncommand: [echo]\n")
    write(workdir / "tools" / "b.yaml", UNUSED_AND_MISSING)
    result = nami("check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["ok"], report["errors"], report["warnings"], report["tools"]) == (False, 1, 2, None)
    assert report["problems"][0] == {
        "file": "tools/a.yaml", "line": 3, "col": 7, "path": "$.risk",
        "message": "\"reed\" is not one of: \"read\", \"write\", \"exec\"; did you mean 'read'?", "severity": "error",
    }
    assert [(p["file"], p["line"], p["severity"]) for p in report["problems"][1:]] == [
        ("tools/b.yaml", 7, "warning"), ("tools/b.yaml", 8, "warning")]


def test_check_json_when_all_is_well_and_with_strict(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [read_file], files: [t.yaml]}\n")
    write(workdir / "t.yaml", UNUSED_AND_MISSING)
    report = json.loads(nami("check", "--json").stdout)
    # read_file, t.yaml's tool, and tool_docs (added because read_file has docs on demand)
    assert (report["ok"], report["errors"], report["warnings"], report["tools"]) == (True, 0, 2, 3)
    strict = nami("check", "--json", "--strict")
    assert strict.exit_code == 1 and json.loads(strict.stdout)["warnings"] == 2


def test_check_json_for_a_broken_agent_yaml_and_a_config_error(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model:\n  nmae: x\n")
    report = json.loads(nami("check", "--json").stdout)
    assert report["problems"] == [{"file": "agent.yaml", "line": 2, "col": 3, "path": "$.model.nmae",
                                   "message": "unknown key 'nmae'; did you mean 'name'?", "severity": "error"}]
    write(workdir / "agent.yaml", "tools: {builtin: [gerp]}\n")
    result = nami("check", "--json")
    assert result.exit_code == 1
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["severity"] == "error" and "unknown built-in tool 'gerp'" in problem["message"]


def test_a_tab_in_the_indentation_is_named(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    write(workdir / "t.yaml", "name: t\ndescription: d\nparameters:\n  type: object\n\tproperties: {}\ncommand: [echo]\n")
    result = nami("check")
    assert result.stderr == ("t.yaml:5:1: $: YAML syntax error: tab characters are not allowed for indentation; "
                             "indent with spaces\n1 problem found\n")
