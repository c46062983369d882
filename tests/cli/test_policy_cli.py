"""Rules checked before they matter: ``policy_tests`` run by ``nami check`` and ``nami policy test`` (the
decision the model's calls get, from the real executor and guards), and ``nami log --replay`` deciding a
real run's history (against the fake server) again under a changed configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import KUBECTL_ON_TARGETS, run_nami, write

PROJECT = """\
targets:
  dev: {vars: {context: dev-eu}}
  prod: {vars: {context: prod-eu}}
tools: {builtin: [bash, write_file], files: [tools/]}
rules:
  - {tool: kubectl_change, args: {target: prod}, decision: ask}
  - {tool: kubectl_change, args: {target: prod, verb: delete}, decision: deny}
  - {tool: bash, command: "git push --force", decision: deny}
  - {tool: write_file, decision: allow}
"""
PASSING = """\
policy_tests:
  - call: {tool: kubectl_change, args: {verb: delete, resource: pod/web, target: prod}}
    expect: deny
  - call: {tool: kubectl_change, args: {verb: apply, resource: web, target: prod}}
    expect: ask
  - call: {tool: kubectl_change, args: {verb: delete, resource: pod/web, target: dev}}
    expect: ask
  - call: {tool: bash, args: {command: "git push --force origin main"}}
    expect: deny
  - name: a write where writing runs code asks, whatever rule allows write_file
    call: {tool: write_file, args: {path: .git/hooks/pre-commit, content: "echo hi"}}
    expect: ask
"""


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "tools" / "kubectl.yaml", KUBECTL_ON_TARGETS)
    (workdir / ".git").mkdir()
    return workdir


def test_nami_check_runs_the_policy_tests(project: Path) -> None:
    write(project / "agent.yaml", PROJECT + PASSING)
    passing = run_nami(None, "check", cwd=project)
    assert passing.returncode == 0, passing.stderr
    assert "5 policy tests passed" in passing.stdout
    failing = PASSING.replace("verb: delete, resource: pod/web, target: dev}}\n    expect: ask",
                              "verb: delete, resource: pod/web, target: dev}}\n    expect: deny")
    write(project / "agent.yaml", PROJECT + failing + "  - call: {tool: kubectl_get}\n    expect: allow\n")
    result = run_nami(None, "check", cwd=project)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "agent.yaml:16:13: $.policy_tests[2].expect: expected deny, decided ask by permissions.exec",
        "agent.yaml:22:11: $.policy_tests[5].call: the call is not valid: unknown tool 'kubectl_get'. Available "
        "tools: bash, write_file, tool_docs, kubectl_change",
        "2 problems found"]


def test_policy_tests_in_a_file_of_their_own(project: Path) -> None:
    write(project / "agent.yaml", PROJECT + "policy_tests: policy/tests.yaml\n")
    write(project / "policy" / "tests.yaml", "- call: {tool: bash, args: {command: git status}}\n  expect: allow\n"
                                             "- call: {tool: bash}\n  expct: deny\n")
    result = run_nami(None, "check", cwd=project)
    assert result.returncode == 1
    assert "policy/tests.yaml:3:3: $[1]: missing required 'expect'" in result.stderr
    assert "policy/tests.yaml:4:3: $[1].expct: unknown key 'expct'; did you mean 'expect'?" in result.stderr
    write(project / "policy" / "tests.yaml", "- call: {tool: bash, args: {command: git status}}\n  expect: allow\n")
    failing = run_nami(None, "check", cwd=project)
    assert failing.stderr.splitlines()[0] == ("policy/tests.yaml:2:11: $[0].expect: expected allow, decided ask by "
                                              "permissions.exec")
    (project / "policy" / "tests.yaml").unlink()
    missing = run_nami(None, "check", cwd=project)
    assert "agent.yaml:10:15: $.policy_tests: cannot read the policy tests policy/tests.yaml" in missing.stderr


def test_nami_policy_test_shows_each_test_and_a_summary(project: Path) -> None:
    write(project / "agent.yaml", PROJECT + PASSING)
    passed = run_nami(None, "policy", "test", cwd=project)
    assert passed.returncode == 0, passed.stderr
    lines = passed.stdout.splitlines()
    assert lines[0] == ('PASS  kubectl_change verb="delete" resource="pod/web" target="prod"  → deny by rule '
                        'agent.yaml:7:5 (a rule denies kubectl_change where target is "prod" and verb is "delete")')
    assert lines[4].startswith("PASS  a write where writing runs code asks, whatever rule allows write_file  → ask "
                               "by permissions.exec")
    assert lines[-1] == "5 tests: 5 passed, 0 failed"
    write(project / "agent.yaml", PROJECT.replace("decision: deny}\n  - {tool: bash", "decision: ask}\n  - {tool: bash")
          + PASSING)
    failed = run_nami(None, "policy", "test", cwd=project)
    assert failed.returncode == 1
    why = 'ask by rule agent.yaml:6:5 (a rule asks about kubectl_change where target is "prod")'
    assert failed.stdout.splitlines()[:2] == [
        f'FAIL  kubectl_change verb="delete" resource="pod/web" target="prod"  → {why}',
        f"      agent.yaml:12:13: $.policy_tests[0].expect: expected deny, decided {why}"]
    assert failed.stdout.splitlines()[-1] == "5 tests: 4 passed, 1 failed"
    as_json = json.loads(run_nami(None, "policy", "test", "--json", cwd=project).stdout)
    assert (as_json["ok"], as_json["passed"], as_json["failed"]) == (False, 4, 1)
    assert as_json["tests"][0]["decided_by"] == "rule agent.yaml:6:5"


def test_replay_lists_the_calls_a_new_rule_decides_differently(fake_openai: FakeOpenAIServer, project: Path) -> None:
    write(project / "agent.yaml", PROJECT)
    assert run_nami(None, "trust", "--yes", cwd=project).returncode == 0
    fake_openai.add(tool_calls(call("kubectl_change", {"verb": "apply", "resource": "web", "target": "dev"}),
                               call("kubectl_change", {"verb": "apply", "resource": "web", "target": "prod",
                                                       "api_token": "tok-1234567890"}),
                               call("bash", {"command": "git status"})),
                    text("done"))
    ran = run_nami(fake_openai, "run", "--yes", "apply web everywhere", cwd=project)
    assert ran.returncode == 0, ran.stderr
    unchanged = run_nami(None, "log", "--replay", cwd=project)
    assert unchanged.returncode == 0 and unchanged.stdout == ""
    assert f"0 of 3 calls of {project} would be decided differently under {project}/agent.yaml" in unchanged.stderr
    # the change under review: applies on dev run without asking, nothing changes prod from here
    write(project / "next.yaml", PROJECT.replace(
        "  - {tool: kubectl_change, args: {target: prod}, decision: ask}\n",
        "  - {tool: kubectl_change, args: {target: dev}, decision: allow}\n"
        "  - {tool: kubectl_change, args: {target: prod}, decision: deny}\n"))
    result = run_nami(None, "log", "--replay", "--config", "next.yaml", cwd=project)
    assert result.returncode == 0, result.stderr
    dev, prod = result.stdout.splitlines()
    assert "  kubectl_change on dev  echo kubectl --context dev-eu apply web --token=none  was ask (by " \
           "permissions.exec) → would be allow by rule next.yaml:6:5" in dev
    assert "  kubectl_change on prod  " in prod and "was ask (by rule agent.yaml:6:5) → would be deny by rule " \
           "next.yaml:7:5" in prod
    # api_token is redacted in the log (its default too): such a call cannot be replayed exactly, and says so
    assert dev.endswith("[redacted values: decided with [redacted] in their place, not exact]")
    assert prod.endswith("[redacted values: decided with [redacted] in their place, not exact]")
    assert "tok-1234567890" not in result.stdout
    assert (f"2 of 3 calls of {project} would be decided differently under {project}/next.yaml; 2 had redacted "
            "values") in result.stderr
    changes = [json.loads(line) for line in run_nami(None, "log", "--replay", "--json", "--config", "next.yaml",
                                                     "--target", "prod", cwd=project).stdout.splitlines()]
    assert [(c["was"], c["would_be"], c["target"], c["redacted"]) for c in changes] == [("ask", "deny", "prod", True)]
