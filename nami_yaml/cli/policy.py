"""``nami policy test``: the project's policy_tests, each decided as a model's call would be, with a summary."""

from __future__ import annotations

import click

from nami_yaml.app.checking import plural
from nami_yaml.app.policy_check import hooks_not_run, open_for_deciding, project_policy_tests
from nami_yaml.cli.common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, config_option, handle_errors
from nami_yaml.display import safe_json, visible, visible_line
from nami_yaml.policy.policy_tests import Outcome


@click.group("policy")
def policy_group() -> None:
    """Check the permission rules before a model meets them."""


@policy_group.command("test")
@config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object: ok, counts, and every test's outcome.")
@handle_errors
def test(config: str | None, as_json: bool) -> None:
    """Decide every call of agent.yaml's policy_tests as a model's call is decided (rules, writes that run
    code, permissions), without running or asking anything; show each and a summary.

    Exit codes: 0 every test passed, 1 a test failed, 2 the configuration or the tests cannot be read.
    """
    with open_for_deciding(config) as project:
        report = project_policy_tests(project)
        note = hooks_not_run(project)
    if note:
        click.echo(f"nami: {note}", err=True)
    if report.problems:
        for problem in report.problems:
            click.echo(str(problem), err=True)
        raise SystemExit(EXIT_USAGE)
    failed = len(report.failed)
    if as_json:
        click.echo(safe_json({"ok": failed == 0, "passed": len(report.outcomes) - failed, "failed": failed,
                              "tests": [_entry(o) for o in report.outcomes]}, indent=2))
        raise SystemExit(EXIT_ERROR if failed else EXIT_OK)
    if not report.outcomes:
        click.echo("no policy tests: list calls and the decision each must get under policy_tests: in agent.yaml")
        return
    for outcome in report.outcomes:
        mark = "PASS" if outcome.passed else "FAIL"
        click.echo(visible_line(f"{mark}  {outcome.test.title()}  → {outcome.verdict()}"))
        problem = outcome.problem()
        if problem is not None:
            click.echo(visible(f"      {problem}"))
    summary = f"{plural(len(report.outcomes), 'test')}: {len(report.outcomes) - failed} passed, {failed} failed"
    click.echo(summary)
    if failed:
        raise SystemExit(EXIT_ERROR)


def _entry(outcome: Outcome) -> dict[str, object]:
    decision = outcome.decision
    problem = outcome.problem()
    return {"name": outcome.test.title(), "tool": outcome.test.tool, "args": outcome.test.args,
            "expect": outcome.test.expect, "passed": outcome.passed,
            "decision": decision.action if decision else None, "decided_by": decision.source if decision else None,
            "invalid": outcome.invalid, "problem": str(problem) if problem else None}
