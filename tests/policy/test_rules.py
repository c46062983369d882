"""Rules on typed argument values: allow, ask and deny by tool name and value; the strictest wins; read
tools too; every spelling of a path; and `nami check` explaining mistakes with file:line:col."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from tests.helpers import programs_on_path

Decide = Callable[..., Decision]

KUBECTL_RULES = """\
  - tool: kubectl_*
    args: {verb: [get, describe, logs]}
    decision: allow
  - tool: kubectl_*
    args: {verb: delete}
    decision: deny
    reason: deleting is the CD pipeline's job
  - tool: kubectl_*
    args: {namespace: kube-system}
    decision: ask
  - tool: kubectl_change
    args: {verb: scale, namespace: {not: [prod, {glob: "prod-*"}]}}
    decision: allow
"""


def test_allow_ask_deny_by_value(rules: Callable[[str], Decide]) -> None:
    decide = rules(KUBECTL_RULES)
    assert decide("kubectl_get", verb="get", resource="pods") == Decision("allow", None, "rule agent.yaml:3:5")
    denied = decide("kubectl_change", verb="delete", resource="pod/x")
    assert denied == Decision("deny", "deleting is the CD pipeline's job", "rule agent.yaml:6:5")
    asked = decide("kubectl_get", verb="logs", resource="pod/x", namespace="kube-system")
    assert (asked.action, asked.source) == ("ask", "rule agent.yaml:10:5")  # allow and ask match: ask wins
    assert asked.reason == "a rule asks about kubectl_* where namespace is \"kube-system\""


def test_the_strictest_matching_rule_wins(rules: Callable[[str], Decide]) -> None:
    decide = rules(KUBECTL_RULES + "  - tool: kubectl_get\n    decision: deny\n")
    assert decide("kubectl_get", verb="get", resource="pods").action == "deny"


def test_no_matching_rule_leaves_it_to_permissions(rules: Callable[[str], Decide]) -> None:
    decide = rules(KUBECTL_RULES)
    assert decide("kubectl_change", verb="apply", resource="x") == Decision("ask", None, "permissions.exec")
    assert decide("kubectl_change", verb="apply", resource="x", namespace="kube-system").source == "rule agent.yaml:10:5"


def test_not_and_globs(rules: Callable[[str], Decide]) -> None:
    decide = rules(KUBECTL_RULES)
    assert decide("kubectl_change", verb="scale", resource="d/x", namespace="staging").action == "allow"
    assert decide("kubectl_change", verb="scale", resource="d/x", namespace="prod").action == "ask"
    assert decide("kubectl_change", verb="scale", resource="d/x", namespace="prod-eu").action == "ask"


def test_an_array_argument_is_allowed_only_when_every_element_is(rules: Callable[[str], Decide]) -> None:
    decide = rules("  - tool: kubectl_change\n    args: {files: {path: 'manifests/**'}}\n    decision: allow\n"
                   "  - tool: kubectl_change\n    args: {files: {glob: '*secret*'}}\n    decision: deny\n")
    assert decide("kubectl_change", verb="apply", resource="x", files=["manifests/a.yaml"]).action == "allow"
    assert decide("kubectl_change", verb="apply", resource="x", files=["manifests/a.yaml", "b.yaml"]).action == "ask"
    assert decide("kubectl_change", verb="apply", resource="x", files=["manifests/secret.yaml"]).action == "deny"
    assert decide("kubectl_change", verb="apply", resource="x", files=[]).action == "ask"  # nothing to match


ENV_RULES = """\
  - tool: read_file
    args: {path: {path: "**/.env"}}
    decision: deny
  - tool: write_file
    args: {path: {path: "src/**"}}
    decision: allow
  - tool: fetch_url
    args: {url: {regex: "^https?://([^/]*\\\\.)?internal\\\\.example\\\\.com(:\\\\d+)?(/|$)"}}
    decision: deny
    reason: internal hosts are off limits
"""


@pytest.mark.parametrize("path", [".env", "./.env", "config/.env", "config/../.env", "src/./../.env", "link-to-env",
                                  "ABS"])
def test_a_read_tool_is_denied_for_every_spelling_of_a_path(rules: Callable[[str], Decide], workdir: Path,
                                                            path: str) -> None:
    (workdir / ".env").write_text("TOKEN=x\n")
    (workdir / "config").mkdir()
    os.symlink(workdir / ".env", workdir / "link-to-env")
    decide = rules(ENV_RULES)
    path = str(workdir / ".env") if path == "ABS" else path
    decision = decide("read_file", path=path)
    assert (decision.action, decision.source) == ("deny", "rule agent.yaml:3:5"), path


@pytest.mark.parametrize("path", [".ENV", "Config/.Env", "./.eNv"])
def test_a_deny_catches_other_cases_of_a_name(rules: Callable[[str], Decide], path: str) -> None:
    """On a case-insensitive file system (macOS, Windows drives) `.ENV` is `.env`: a deny or ask must not
    depend on the case the model chose. (This machine's file systems are case-sensitive, so the test
    decides on the name; an allow still needs the exact case, which errs toward asking.)"""
    assert rules(ENV_RULES)("read_file", path=path).action == "deny", path


@pytest.mark.parametrize(("path", "action"), [("src/app.py", "allow"), ("SRC/app.py", "ask"), ("Src/../.env", "ask")])
def test_an_allow_needs_the_exact_case(rules: Callable[[str], Decide], path: str, action: str) -> None:
    assert rules(ENV_RULES)("write_file", path=path, content="x").action == action


def test_other_files_are_read_as_usual(rules: Callable[[str], Decide], workdir: Path) -> None:
    (workdir / ".envrc").write_text("x\n")
    assert rules(ENV_RULES)("read_file", path=".envrc") == Decision("allow", None, None)


@pytest.mark.parametrize(("path", "action"), [
    ("src/app.py", "allow"), ("src/deep/er/x.py", "allow"), ("src", "allow"),
    ("src/../setup.py", "ask"), ("src/escape/x.py", "ask"), ("docs/x.md", "ask"),
])
def test_an_allowed_path_must_be_there_however_it_is_reached(rules: Callable[[str], Decide], workdir: Path,
                                                             path: str, action: str) -> None:
    (workdir / "src").mkdir()
    os.symlink(workdir, workdir / "src" / "escape")  # src/escape/x.py is ./x.py
    assert rules(ENV_RULES)("write_file", path=path, content="x").action == action


@pytest.mark.parametrize(("url", "action"), [
    ("https://grafana.internal.example.com/d/x", "deny"), ("http://internal.example.com:8080/", "deny"),
    ("https://internal.example.com", "deny"), ("https://example.com/internal.example.com", "allow"),
    ("https://notinternal.example.com/", "allow"),
])
def test_a_fetch_is_denied_by_host(rules: Callable[[str], Decide], url: str, action: str) -> None:
    decision = rules(ENV_RULES)("fetch_url", url=url)
    assert decision.action == action, url
    if action == "deny":
        assert decision.reason == "internal hosts are off limits"


def test_a_regex_dollar_means_the_end_of_the_value(rules: Callable[[str], Decide]) -> None:
    decide = rules("  - tool: kubectl_get\n    args: {resource: {regex: '^pods$'}}\n    decision: allow\n")
    assert decide("kubectl_get", verb="get", resource="pods").action == "allow"
    assert decide("kubectl_get", verb="get", resource="pods\nsecrets").action == "allow"  # the read default


def test_a_value_with_a_trailing_newline_does_not_match_an_anchored_allow(rules: Callable[[str], Decide]) -> None:
    decide = rules("  - tool: kubectl_change\n    args: {resource: {regex: '^deploy/web$'}}\n    decision: allow\n")
    assert decide("kubectl_change", verb="scale", resource="deploy/web").action == "allow"
    assert decide("kubectl_change", verb="scale", resource="deploy/web\n").action == "ask"


def test_booleans_are_not_numbers(rules: Callable[[str], Decide], workdir: Path) -> None:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "flag.yaml").write_text(
        "name: flagged\ndescription: x\nrisk: write\nparameters:\n  type: object\n  properties:\n"
        "    n: {type: [integer, boolean]}\n  required: [n]\ncommand: [echo, '{n}']\n")
    decide = rules("  - tool: flagged\n    args: {n: 1}\n    decision: allow\n")
    assert decide("flagged", n=1).action == "allow"
    assert decide("flagged", n=True).action == "ask"


BROKEN = """\
tools: {builtin: [read_file, bash], files: [tools/]}
rules:
  - tool: kubectl_gt
    decision: allow
  - tool: kubectl_*
    args: {verb: get, namespce: default}
    decision: allow
  - tool: read_file
    args: {path: {regex: "[a-z"}}
    decision: deny
  - tool: read_file
    command: ls
    decision: allow
  - tool: bash
    command: ["ls $(pwd)"]
    decision: deny
  - tool: bash
    decision: maybe
"""


def test_nami_check_explains_rule_mistakes_with_positions(workdir: Path, write_rules: Callable[..., None],
                                                          tmp_path: Path) -> None:
    write_rules("")
    (workdir / "agent.yaml").write_text(BROKEN)
    env = {**os.environ, "PATH": programs_on_path(tmp_path / "bin", "kubectl")}  # not "kubectl not found"
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True, env=env)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    rule_mistakes = [
        "agent.yaml:3:11: $.rules[0].tool: no tool is named 'kubectl_gt'; did you mean 'kubectl_get'?",
        "agent.yaml:6:23: $.rules[1].args.namespce: kubectl_* has no parameter 'namespce' (its parameters: files, "
        "namespace, resource, verb)",
        "agent.yaml:9:26: $.rules[2].args.path.regex: regex '[a-z' does not compile: unterminated character set "
        "at position 0",
        "agent.yaml:12:5: $.rules[3].command: command prefixes apply to the bash tool only: give tool: bash "
        "(use args: for other tools)",
        "agent.yaml:15:15: $.rules[4].command[0]: 'ls $(pwd)' is not a plain command: an argument is computed "
        "(command substitution $(…))",
        "tools/kubectl.yaml:24:9: $.tools[1].parameters.properties.files: warning: parameter 'files' is never "
        "used by the command or stdin",
    ]
    # The rule whose decision is not valid is left out; the others are still checked, in the same run.
    assert lines == [*rule_mistakes[:5],
                     "agent.yaml:18:15: $.rules[5].decision: \"maybe\" is not one of: \"allow\", \"ask\", \"deny\"",
                     rule_mistakes[5], "6 problems and 1 warning found"]
    (workdir / "agent.yaml").write_text(BROKEN.replace("    decision: maybe\n", "    decision: ask\n"))
    lines = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True, env=env).stderr.splitlines()
    assert lines == [*rule_mistakes, "5 problems and 1 warning found"]


def test_check_reads_rules_of_an_untrusted_project_without_matching_anything(
        workdir: Path, write_rules: Callable[..., None]) -> None:
    write_rules("  - tool: kubectl_get\n    args: {resource: {regex: '(a+)+$'}}\n    decision: allow\n")
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")


def test_a_path_pattern_that_is_not_valid_is_a_problem_not_a_traceback(workdir: Path,
                                                                        write_rules: Callable[..., None]) -> None:
    """An untrusted agent.yaml with `{path: "[z-a]"}` made nami check end with a re.error traceback."""
    write_rules("  - tool: read_file\n    args: {path: {path: '[z-a]'}}\n    decision: deny\n")
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "agent.yaml:4:25: $.rules[0].args.path.path: path pattern '[z-a]' is not valid: bad character range z-a "
        "at position 1")
