"""Rules on targets: ``args: {target: prod}`` matches like any argument, a pinned target included (the
executor puts it in the call's arguments), and a rule naming a target the project lacks is a problem."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.app import open_project
from nami_yaml.policy.layers import build_policy, rule_problems
from nami_yaml.registry.executor import PreparedToolCall
from tests.helpers import KUBECTL_ON_TARGETS, write

PROJECT = """\
targets:
  dev: {vars: {context: dev-eu}}
  prod: {vars: {context: prod-eu}}
tools: {builtin: [], files: [tools/]}
permissions: {exec: allow}
rules:
  - {tool: kubectl_change, args: {target: prod}, decision: ask, reason: prod changes are reviewed}
  - {tool: kubectl_change, args: {target: prod, verb: delete}, decision: deny}
"""


def decide(workdir: Path, *, pin: str | None = None, **arguments: str) -> tuple[str, str | None]:
    project = open_project(cwd=workdir, trust=True, will_run=True, target=pin)
    policy = build_policy(project.settings, project.registry, project.context.workspace)
    call = project.executor().prepare("kubectl_change", arguments)
    assert isinstance(call, PreparedToolCall), call
    decision = policy(call)
    return decision.action, decision.source


def test_anything_on_prod_asks_and_deletes_on_prod_are_denied_while_dev_runs(workdir: Path) -> None:
    write(workdir / "agent.yaml", PROJECT)
    write(workdir / "tools" / "kubectl.yaml", KUBECTL_ON_TARGETS)
    assert decide(workdir, verb="delete", resource="pod/x", target="dev") == ("allow", "permissions.exec")
    assert decide(workdir, verb="apply", resource="x", target="prod") == ("ask", "rule agent.yaml:7:5")
    assert decide(workdir, verb="delete", resource="x", target="prod") == ("deny", "rule agent.yaml:8:5")


def test_a_pinned_target_is_matched_as_if_the_model_had_chosen_it(workdir: Path) -> None:
    write(workdir / "agent.yaml", PROJECT)
    write(workdir / "tools" / "kubectl.yaml", KUBECTL_ON_TARGETS)
    assert decide(workdir, pin="prod", verb="delete", resource="x") == ("deny", "rule agent.yaml:8:5")
    assert decide(workdir, pin="dev", verb="delete", resource="x") == ("allow", "permissions.exec")


def test_a_rule_naming_a_target_the_project_lacks_is_reported(workdir: Path) -> None:
    write(workdir / "agent.yaml", PROJECT.replace("args: {target: prod, verb: delete}",
                                                  "args: {target: [prod, production], verb: delete}")
          + "  - {tool: kubectl_change, args: {target: {glob: 'stag*'}}, decision: deny}\n")
    write(workdir / "tools" / "kubectl.yaml", KUBECTL_ON_TARGETS)
    project = open_project(cwd=workdir)
    messages = [str(p) for p in rule_problems(project.settings, project.registry)]
    assert messages == [
        "agent.yaml:8:50: $.rules[1].args.target[1]: no target is named \"production\", so this rule never applies to "
        "it (targets: dev, prod)",
        "agent.yaml:9:43: $.rules[2].args.target: no target matches 'stag*' (targets: dev, prod), so this rule never "
        "applies"]
