"""One decision for every call, from the project's rules, the user's own rules and the per-risk defaults.

- With no matching rule, ``permissions`` decide (reads run, writes and commands ask by default).
- The project's agent.yaml (trusted, or named by the user) may loosen or tighten its defaults with rules.
- The user config's rules can only tighten what the project allows: a user deny or ask beats a project
  allow; a user allow never beats a project deny or ask, nor a ``permissions`` deny the project set. Where
  the project says nothing, a user allow is the user's own choice and stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nami_yaml.agent.hooks import Decision, strictest
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.config.effective import Effective
from nami_yaml.errors import Problem, SpecError
from nami_yaml.policy.permissions import RiskPolicy
from nami_yaml.policy.rules import RuleSet, load_rules
from nami_yaml.registry.registry import Registry


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    by_rule: bool  # False: no rule matched, the per-risk default decided


class Policy:
    """The before_tool hook that decides every call (``nami run``, ``chat``, ``tools call``, the API)."""

    def __init__(self, defaults: RiskPolicy, workspace: Path, *, project: RuleSet | None = None,
                 user: RuleSet | None = None, project_denies: frozenset[str] = frozenset()):
        self.defaults = defaults
        self.workspace = workspace
        self.project = project
        self.user = user
        self.project_denies = project_denies  # risks the project's agent.yaml set to deny

    def __call__(self, call: PreparedCall) -> Decision:
        return self.decide(call).decision

    def decide(self, call: PreparedCall) -> Verdict:
        project = self.project.decide(call, self.workspace) if self.project else None
        user = self.user.decide(call, self.workspace) if self.user else None
        default = self.defaults(call)
        if project is None and user is None:
            return Verdict(default, False)
        if user is None:
            assert project is not None
            return Verdict(project, True)
        if project is None:
            risk = call.risk if call.risk in self.defaults.permissions else "exec"
            if user.action == "allow" and default.action == "deny" and risk in self.project_denies:
                return Verdict(default, False)
            return Verdict(user, True)
        chosen = strictest([user, project])  # on a tie the user's rule is the one reported
        assert chosen is not None
        return Verdict(chosen, True)


def build_policy(effective: Effective, registry: Registry, workspace: Path) -> Policy:
    """The policy the settings describe; SpecError (file:line:col) for rules that cannot be used."""
    project, user, problems = _rule_sets(effective, registry)
    if problems:
        raise SpecError(problems)
    project_denies = frozenset(
        risk for risk in ("read", "write", "exec")
        if effective.config_path is not None and effective.get(f"permissions.{risk}") == "deny"
        and effective.sources.get(f"permissions.{risk}") == str(effective.config_path))
    return Policy(RiskPolicy(effective.get("permissions")), workspace, project=project, user=user,
                  project_denies=project_denies)


def rule_problems(effective: Effective, registry: Registry) -> list[Problem]:
    """What ``nami check`` reports about the rules of agent.yaml and the user config."""
    return _rule_sets(effective, registry)[2]


def _rule_sets(effective: Effective, registry: Registry) -> tuple[RuleSet | None, RuleSet | None, list[Problem]]:
    problems: list[Problem] = []
    project = user = None
    project_file = effective.config_file(effective.config_path)
    user_file = effective.config_file(effective.user_config)
    servers = list(effective.get("mcp_servers") or {})
    if project_file is not None:
        project, found = load_rules(project_file, registry, check_tools=True, servers=servers)
        problems += found
    if user_file is not None and user_file is not project_file:
        # The user config serves every project: a rule for tools this one lacks is not a mistake here.
        user, found = load_rules(user_file, registry, check_tools=False)
        problems += found
    return project, user, problems
