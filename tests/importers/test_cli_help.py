"""nami import cli PROGRAM [SUB…]: a tool drafted from the installed program's help, verified against it (its
options listed by the help read in the sandbox, the tool loads, a read tool's probe call succeeds). Run on
the real CLIs of this machine (skipped, saying why, where one is absent; CI requires them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from nami_yaml.importers.cli_help import draft, parse_options, parse_usage, unlisted_options
from tests.helpers import nami
from tests.programs import need

GNU_HELP = """Usage: frob [OPTION]... [FILE]...
Frobnicate FILEs.

  -a, --all             include hidden entries
  -n, --lines=NUM       print the first NUM lines
      --format=<plain|json>  output format
  -o, --output=FILE     write to FILE
      --color[=WHEN]    colorize
      --help        display this help and exit
"""

GIT_STYLE_HELP = """usage: tool show [<options>] <object>...

    -q, --quiet           suppress output
    --decorate-refs <pattern>
                          only decorate refs that match <pattern>
"""


def test_options_and_operands_are_read_from_gnu_and_git_style_help() -> None:
    options = {o.spelling: o for o in parse_options(GNU_HELP)}
    assert options["--all"].metavar is None and options["--lines"].metavar == "NUM"
    assert options["--format"].choices == ("plain", "json")
    assert "--color" not in options  # an optional value: left out
    git = {o.spelling: o for o in parse_options(GIT_STYLE_HELP)}
    assert git["--decorate-refs"].description == "only decorate refs that match <pattern>"
    assert [(p.name, p.optional, p.repeated) for p in parse_usage(GNU_HELP, "frob", [])] == [("file", True, True)]
    assert [(p.name, p.optional) for p in parse_usage(GIT_STYLE_HELP, "tool", ["show"])] == [("object", False)]


def test_the_draft_types_flags_numbers_and_choices_and_leaves_out_writers() -> None:
    tool = draft("frob", [], GNU_HELP).imported.tool
    properties = tool["parameters"]["properties"]
    assert properties["all"]["type"] == "boolean"
    assert properties["lines"]["type"] == "integer"
    assert properties["format"]["enum"] == ["plain", "json"]
    assert "output" not in properties and "help" not in properties  # writes a file; not a tool's business
    assert tool["command"] == ["frob", ["--all", "{all}"], ["--lines", "{lines}"], ["--format", "{format}"], "{file}"]
    assert tool["risk"] == "exec"  # frob: no known verb
    assert unlisted_options(tool, GNU_HELP) == []
    assert unlisted_options({"command": ["frob", ["--bogus", "{x}"]]}, GNU_HELP) == ["--bogus"]


def probe_ok(report: str) -> bool:
    return "verified: options listed by the installed help; loads; probe call succeeded" in report


CASES = [  # program and subcommands, --example values for required operands, what the tool must contain, and
    # the arguments of a call by hand (jq's filter: the importer probes with '.', a person says it)
    (["df"], [], "--human-readable", ["human_readable=true"]),
    (["du"], [], "--max-depth", ["max_depth=1"]),
    (["jq"], [], "{jq_filter}", ["jq_filter=."]),
    (["ps"], [], "{all_processes}", ["all_processes=true"]),
    (["git", "log"], [], "--quiet", []),
    (["curl"], ["--example", "url=file:///etc/hostname"], "{url}", ["url=file:///etc/hostname"]),
]


@pytest.mark.parametrize(("argv", "extra", "expected", "call"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_real_clis_are_drafted_verified_and_load_strictly(workdir: Path, argv: list[str], extra: list[str],
                                                           expected: str, call: list[str]) -> None:
    need(argv[0])
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)  # git log has a repository to read
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=workdir, check=True)
    result = nami("import", "cli", *argv, *extra, "--out", "tools")
    assert result.exit_code == 0 and probe_ok(result.output), result.output
    name = "_".join(argv)
    text = (workdir / "tools" / f"{name}.yaml").read_text()
    assert expected in text and not text.startswith("# NOT VERIFIED")
    tool = yaml.safe_load(text)
    assert tool["risk"] == "read" and tool["docs"] == [*argv, "-h" if len(argv) > 1 else "--help"]
    assert nami("check", "--strict", "tools").exit_code == 0
    called = nami("tools", "call", name, *call, "--tools", "tools")
    assert called.exit_code == 0, called.output


def test_an_option_the_installed_help_does_not_list_is_written_as_not_verified(workdir: Path) -> None:
    need("df")
    result = nami("import", "cli", "df", "--option", "--human-readable", "--option", "--no-such-flag",
                  "--out", "tools")
    assert result.exit_code == 1
    assert "NOT VERIFIED: options not listed by the installed df's help: --no-such-flag" in result.output
    assert (workdir / "tools" / "df.yaml").read_text().startswith("# NOT VERIFIED: options not listed")


def test_network_needs_are_guessed_from_the_program(workdir: Path) -> None:
    need("curl")
    result = nami("import", "cli", "curl", "--dry-run", "--example", "url=file:///etc/hostname")
    assert result.exit_code == 0, result.output
    assert "sandbox: {network: true}" in result.output and not (workdir / "tools").exists()
