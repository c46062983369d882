"""A foreign shell template -> argv when it is plainly one command, else a script whose values are quoted for
the place they stood in (never spliced); checked by running the scripts with bash on hostile values."""

from __future__ import annotations

import os
import subprocess

import pytest

from nami_yaml.importers.template import Optional, Text, Var, convert


def test_one_plain_command_is_argv_with_optional_groups_and_escaped_braces() -> None:
    pieces = [Text("kubectl get pods -o 'jsonpath={.items}' "), Var("name"), Optional("ns", (Text(" -n "), Var("ns")))]
    done = convert(pieces, {"ns"})
    assert done.command == ["kubectl", "get", "pods", "-o", "jsonpath={{.items}}", "{name}", ["-n", "{ns}"]]


@pytest.mark.parametrize("text", ["a | b", "a > f", "a; b", "a && b", "echo $HOME", "ls *.py", "a $(b)", "a `b`"])
def test_anything_more_than_one_command_is_a_script(text: str) -> None:
    done = convert([Text(text + " "), Var("x")], set())
    assert done.command is None and done.script is not None and "outside quotes" in done.why_script


SCRIPTS = [  # a template, and what its one line must print for x and y
    ([Text('printf "[%s]" "n=$(printf %s '), Var("x"), Text(')"')], "[n={x}]"),
    ([Text("printf '[%s]' 'in single "), Var("x"), Text("' | cat")], "[in single {x}]"),
    ([Text('printf "[%s]" "in double '), Var("x"), Text('" | cat')], "[in double {x}]"),
    ([Text("printf '[%s]' "), Var("x"), Text(' "`printf %s '), Var("y"), Text('`" | cat')], "[{x}][{y}]"),
    ([Text("printf '[%s]' a"), Optional("x", (Text(" -n "), Var("x"))), Text(" | cat")], "[a][-n][{x}]"),
]
HOSTILE = ["$(touch PWNED)", "`touch PWNED`", "a'b\"c", "* ?", "x\"; touch PWNED; \""]


@pytest.mark.parametrize(("pieces", "expected"), SCRIPTS)
def test_script_values_stay_values_wherever_they_stood(pieces, expected: str, tmp_path) -> None:
    script = convert(pieces, set()).script
    assert script is not None
    for value in HOSTILE:
        env = {**os.environ, "x": value, "y": value}
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
        assert done.stdout == expected.format(x=value, y=value), (script, value, done.stderr)
        assert not (tmp_path / "PWNED").exists()
