"""The one decision for every call, from the project's rules, the user's own rules, writes that run code and
the per-risk defaults. Every path decides here (the model's calls, calls by hand, dry runs, ``mcp serve``,
batch); they differ only in the fallback (who answers what no rule decided) and in who is asked.

- With no matching rule, the fallback decides: ``permissions`` (reads run, writes and commands ask by
  default); for a call by hand, the person calling is the yes to what ``permissions`` would ask.
- A write into a path where writing runs code is decided as an ``exec`` call is, whatever rule allows the
  tool (``CodeWrites``: of all opinions the strictest wins, so no allow loosens it).
- The project's agent.yaml (trusted, or named by the user) may loosen or tighten its defaults with rules.
- The user config's rules can only tighten what the project allows: a user deny or ask beats a project
  allow; a user allow never beats a project deny or ask, nor a ``permissions`` deny the project set. Where
  the project says nothing, a user allow is the user's own choice and stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.agent.hooks import Decision, strictest
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.config.effective import Effective
from nami_yaml.errors import Problem, SpecError
from nami_yaml.policy.permissions import CodeWrites, RiskPolicy
from nami_yaml.policy.rules import RuleSet, denied_programs, load_rules
from nami_yaml.policy.target_rules import unknown_target_problems
from nami_yaml.registry.registry import Registry

Fallback = Callable[[PreparedCall], Decision]
"""What decides a call no rule matched: the per-risk defaults, or :func:`by_hand` of them."""


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    by_rule: bool  # False: no rule matched, the fallback decided (writes that run code may still ask)


class Policy:
    """The before_tool hook that decides every call (``nami run``, ``chat``, ``tools call``, ``mcp serve``,
    batch, the API)."""

    def __init__(self, defaults: RiskPolicy, workspace: Path, *, project: RuleSet | None = None,
                 user: RuleSet | None = None, project_denies: frozenset[str] = frozenset(),
                 code_writes: CodeWrites | None = None):
        self.defaults = defaults
        self.workspace = workspace
        self.project = project
        self.user = user
        self.project_denies = project_denies  # risks the project's agent.yaml set to deny
        self.code_writes = code_writes or CodeWrites(defaults.permissions)

    def __call__(self, call: PreparedCall) -> Decision:
        return self.decide(call).decision

    def decide(self, call: PreparedCall, fallback: Fallback | None = None) -> Verdict:
        """The rules' decision, else the fallback's (the per-risk defaults unless given); a write that runs
        code asks (or is denied) as an exec call would, whatever decided."""
        verdict = self._rules(call, fallback or self.defaults)
        writes = self.code_writes(call)
        if writes is None:
            return verdict
        # Of equally strict opinions the first is reported: the one that says why, where the other does not.
        decision = strictest([verdict.decision, writes] if verdict.decision.reason else [writes, verdict.decision])
        assert decision is not None
        return Verdict(decision, verdict.by_rule)

    def _rules(self, call: PreparedCall, fallback: Fallback) -> Verdict:
        project = self.project.decide(call, self.workspace) if self.project else None
        user = self.user.decide(call, self.workspace) if self.user else None
        if project is None and user is None:
            return Verdict(fallback(call), False)
        if user is None:
            assert project is not None
            return Verdict(project, True)
        if project is None:
            risk = call.risk if call.risk in self.defaults.permissions else "exec"
            default = self.defaults(call)
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
        if effective.config_path is not None and getattr(effective.permissions, risk) == "deny"
        and effective.origin(f"permissions.{risk}") == str(effective.config_path))
    permissions = effective.permissions.as_mapping()
    return Policy(RiskPolicy(permissions), workspace, project=project, user=user, project_denies=project_denies,
                  code_writes=CodeWrites(permissions))


def project_denied_programs(effective: Effective) -> tuple[str, ...]:
    """The programs agent.yaml's and the user config's bash rules deny by name alone (rules.denied_programs)."""
    files = [effective.config_file(effective.config_path), effective.config_file(effective.user_config)]
    return tuple(dict.fromkeys(name for file in files if file is not None for name in denied_programs(file)))


def rule_problems(effective: Effective, registry: Registry, *, all_tools: bool = True) -> list[Problem]:
    """What ``nami check`` reports about the rules of agent.yaml and the user config. ``all_tools=False``:
    some tools did not load, so a rule naming a tool missing from ``registry`` is not reported."""
    return _rule_sets(effective, registry, all_tools)[2]


def _rule_sets(effective: Effective, registry: Registry,
               all_tools: bool = True) -> tuple[RuleSet | None, RuleSet | None, list[Problem]]:
    problems: list[Problem] = []
    project = user = None
    project_file = effective.config_file(effective.config_path)
    user_file = effective.config_file(effective.user_config)
    servers = list(effective.get("mcp_servers") or {})
    if project_file is not None:
        project, found = load_rules(project_file, registry, check_tools=all_tools, servers=servers)
        problems += found + unknown_target_problems(project_file, registry, list(effective.get("targets") or {}))
    if user_file is not None and user_file is not project_file:
        # The user config serves every project: a rule for tools this one lacks is not a mistake here.
        user, found = load_rules(user_file, registry, check_tools=False)
        problems += found
    return project, user, problems
