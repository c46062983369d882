"""A placeholder inside code an argv hands to a shell or interpreter is refused at load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.code_args import code_placeholders, program_name
from nami_yaml.registry.loader import load_tool_file

TEXT = {"type": "string"}


def found(argv: list[str], properties: dict[str, Any] | None = None) -> list[int]:
    props = properties if properties is not None else {"x": TEXT, "y": TEXT}
    return [where for where, _ in code_placeholders(list(enumerate(argv)), props)]


@pytest.mark.parametrize("argv, where", [
    (["sh", "-c", "echo {x}"], [2]),
    (["/bin/bash", "-c", "ls {x}"], [2]),
    (["bash", "-ec", "ls {x}"], [2]),
    (["bash", "-lc", "ls {x}"], [2]),
    (["bash", "-c", "-x", "ls {x}"], [3]),
    (["bash", "-o", "pipefail", "-c", "ls {x}"], [4]),
    (["bash", "-e", "-c", "--", "ls {x}"], [4]),
    (["zsh", "-c", "{x}"], [2]), (["dash", "-c", "{x}"], [2]), (["ksh", "-c", "{x}"], [2]),
    (["fish", "-c", "echo {x}"], [2]), (["fish", "--command=echo {x}"], [1]), (["fish", "--command", "{x}"], [2]),
    (["/usr/bin/env", "bash", "-c", "ls {x}"], [3]),
    (["timeout", "5", "sh", "-c", "ls {x}"], [4]),
    (["kubectl", "exec", "{y}", "--", "sh", "-c", "cat {x}"], [6]),
    (["busybox", "sh", "-c", "{x}"], [3]),
    (["python", "-c", "print('{x}')"], [2]), (["python3.12", "-c", "{x}"], [2]), (["python3", "-Ic", "{x}"], [2]),
    (["python3", "-cimport os; os.system('{x}')"], [1]), (["pypy3", "-c", "{x}"], [2]),
    (["python3", "-W", "ignore", "-c", "{x}"], [4]),
    (["node", "-e", "{x}"], [2]), (["node", "--eval", "{x}"], [2]), (["node", "--eval={x}"], [1]),
    (["node", "-p", "{x}"], [2]), (["nodejs", "-e", "{x}"], [2]), (["deno", "eval", "{x}"], [2]),
    (["perl", "-e", "print {x}"], [2]), (["perl", "-ne", "print if /{x}/"], [2]), (["perl", "-E", "say {x}"], [2]),
    (["perl", "-e{x}"], [1]), (["ruby", "-e", "{x}"], [2]), (["php", "-r", "{x}"], [2]),
    (["lua5.4", "-e", "{x}"], [2]), (["Rscript", "-e", "{x}"], [2]), (["pwsh", "-Command", "{x}"], [2]),
    (["awk", "{{print {x}}}"], [1]), (["gawk", "-F", ",", "/{x}/"], [3]), (["awk", "-e", "{x}"], [2]),
    (["ssh", "{y}", "systemctl", "status", "{x}"], [4]), (["ssh", "-p", "22", "host", "cat {x}"], [4]),
    (["ssh", "-oBatchMode=yes", "host", "ls", "{x}"], [4]),
], ids=lambda value: " ".join(value) if isinstance(value, list) and value and isinstance(value[0], str) else None)
def test_code_placeholders_are_found(argv: list[str], where: list[int]) -> None:
    assert found(argv) == where


@pytest.mark.parametrize("argv", [
    ["sh", "-c", 'echo "$1"', "sh", "{x}"],             # the value as an argument of its own: safe
    ["bash", "script.sh", "{x}"],                        # a script file with the value as an argument
    ["python3", "tool.py", "-c", "{x}"],                 # -c after the script belongs to the script
    ["python3", "-m", "mod", "-c", "{x}"],
    ["grep", "-e", "{x}", "."],                          # grep's -e is a pattern, not code
    ["awk", "-v", "v={x}", "{{ print v }}"],
    ["awk", "-f", "prog.awk", "{x}"],
    ["node", "app.js", "-e", "{x}"],
    ["ssh", "{y}", "uptime"],
    ["git", "log", "{x}"],
    ["echo", "sh", "-c"],
])
def test_values_that_stay_data_are_fine(argv: list[str]) -> None:
    assert found(argv) == []


def test_inert_parameters_may_fill_code() -> None:
    props = {"n": {"type": "integer"}, "on": {"type": "boolean"}, "action": {"enum": ["start", "stop"]},
             "bad": {"enum": ["start", "stop; rm -rf /"]}, "free": {"type": "string", "pattern": "^[a-z]+$"}}
    argv = ["sh", "-c", "systemctl {action} app && sleep {n} && echo {on} {bad} {free}"]
    messages = [m for _, m in code_placeholders(list(enumerate(argv)), props)]
    assert [m.split(" is inside")[0] for m in messages] == ["placeholder {bad}", "placeholder {free}"]


def test_program_names() -> None:
    assert [program_name(n) for n in ("/usr/bin/python3.12", "bash", "perl5.36", "node18", "Rscript", "x86")] == [
        "python", "bash", "perl", "node", "rscript", "x"]


def test_nami_check_refuses_a_shell_with_a_placeholder(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text('name: t\ndescription: d\nparameters: {type: object, properties: {x: {type: string}}, '
                    'required: [x]}\ncommand: [sh, -c, "echo {x}"]\n')
    tools, problems = load_tool_file(path)
    assert tools == []
    assert [(p.path, p.line, p.col) for p in problems] == [("$.command[2]", 4, 19)]
    assert problems[0].message.startswith("placeholder {x} is inside the code that `sh` runs, so its value would "
                                          "run as code (injection). Use `script:`")
    # the way out, written with this parameter's name
    assert problems[0].message.endswith("""e.g. [sh, -c, 'echo "$1"', sh, "{x}"] for a shell.""")


def test_the_hints_name_the_parameter() -> None:
    props = {"pattern": {"type": "string"}, "folder": {"type": "string"}}
    (awk,) = [m for _, m in code_placeholders(list(enumerate(["awk", "/{pattern}/"])), props)]
    assert awk.endswith("""[awk, -v, "pattern={pattern}", '{ print pattern }'].""")
    (ssh,) = [m for _, m in code_placeholders(list(enumerate(["ssh", "host", "ls {folder}"])), props)]
    assert ssh.endswith("constrain {folder} to an enum or a number.") and "{value}" not in awk + ssh


def test_optional_groups_are_searched(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text('name: t\ndescription: d\nparameters: {type: object, properties: {x: {type: string}}}\n'
                    'command: [bash, [-c, "ls {x}"]]\n')
    tools, problems = load_tool_file(path)
    assert tools == [] and [p.path for p in problems] == ["$.command[1][1]"]
