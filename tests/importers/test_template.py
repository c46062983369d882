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


@pytest.mark.parametrize("text", ["a || b", "a | b > f", "a > f", "a; b", "a && b", "echo $HOME", "ls *.py", "a $(b)", "a `b`"])
def test_anything_more_than_one_command_is_a_script(text: str) -> None:
    done = convert([Text(text + " "), Var("x")], set())
    assert done.command is None and done.script is not None and "outside quotes" in done.why_script


def test_an_else_branch_is_a_group_switched_on_by_the_negated_parameter() -> None:
    pieces = [Text("kubectl get svc"), Optional("ns", (Text(" -n "), Var("ns")), (Text(" -A"),)), Text(" -o wide")]
    assert convert(pieces, {"ns"}).command == ["kubectl", "get", "svc", ["-n", "{ns}"], ["-A", "{!ns}"], "-o", "wide"]


@pytest.mark.parametrize(("text", "pipeline", "command", "output"), [
    ("kubectl get pods -A | grep ", None, ["kubectl", "get", "pods", "-A"], {"grep": "{x}"}),
    ("kubectl get pods -o json | jq -r .items | head -n 5 | grep ", [["kubectl", "get", "pods", "-o", "json"],
                                                                      ["jq", "-r", ".items"], ["head", "-n", "5"]],
     None, {"grep": "{x}"}),  # grep after head: nami's filters apply grep first, so head stays a stage
    ("journalctl -u x | grep -i error | tail -20 | grep -e ", [["journalctl", "-u", "x"], ["grep", "-i", "error"],
                                                              ["tail", "-20"]], None, {"grep": "{x}"}),
    ("git log | grep 'a|b' | wc -l | head -n ", [["git", "log"], ["grep", "a|b"], ["wc", "-l"]], None,
     {"head": "{x}"}),  # a grep pattern Python's re reads otherwise stays a grep stage
])
def test_commands_joined_only_by_pipes_are_a_pipeline_ending_in_output_filters(text, pipeline, command, output):
    done = convert([Text(text), Var("x")], set())
    assert (done.pipeline, done.command, done.output, done.script) == (pipeline, command, output, None)


def test_stderr_redirects_are_left_out_where_nami_returns_stderr_anyway() -> None:
    done = convert([Text("kubectl get providers "), Var("x"), Text(" -o wide 2>&1")], set())
    assert done.command == ["kubectl", "get", "providers", "{x}", "-o", "wide"] and done.dropped == ["2>&1"]
    piped = convert([Text("kubectl api-resources 2>/dev/null | grep -q providers")], set())
    assert piped.pipeline == [["kubectl", "api-resources"], ["grep", "-q", "providers"]]
    quoted = convert([Text("echo '2>&1' "), Var("x")], set())  # inside quotes: a word like any other
    assert quoted.command == ["echo", "2>&1", "{x}"] and quoted.dropped == []
    kept = convert([Text("a 2>&1 > f "), Var("x")], set())  # still a script: written as it was
    assert kept.script == 'a 2>&1 > f "${x}"'


SCRIPTS = [  # a template, and what its one line must print for x and y
    ([Text('printf "[%s]" "n=$(printf %s '), Var("x"), Text(')"')], "[n={x}]"),
    ([Text("printf '[%s]' 'in single "), Var("x"), Text("' ; true")], "[in single {x}]"),
    ([Text('printf "[%s]" "in double '), Var("x"), Text('" ; true')], "[in double {x}]"),
    ([Text("printf '[%s]' "), Var("x"), Text(' "`printf %s '), Var("y"), Text('`" ; true')], "[{x}][{y}]"),
    ([Text("printf '[%s]' a"), Optional("x", (Text(" -n "), Var("x"))), Text(" ; true")], "[a][-n][{x}]"),
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
