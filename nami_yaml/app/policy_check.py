"""Deciding calls that will not run, with the one decision path the model's calls take: ``policy_tests``
(``nami check``, ``nami policy test``) and the replay of the audit log under a configuration
(``nami log --replay``). A call is prepared by the real executor (validated, defaults applied, a pinned
or default target filled in) and decided by :meth:`Guards.decide`; nothing is run, asked or recorded."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import Decision
from nami_yaml.app.dry_run import would_plan
from nami_yaml.app.guards import Guards
from nami_yaml.app.project import Project, open_project
from nami_yaml.errors import Problem
from nami_yaml.policy.audit_read import LogLine
from nami_yaml.policy.policy_tests import Decide, Outcome, load_policy_tests, run_policy_tests
from nami_yaml.policy.replay import BY_HAND_VIA, ReplayReport, replay
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.result import ToolResult

ERROR_PREFIX = "Error: "


def open_for_deciding(config: str | Path | None = None, *, cwd: Path | None = None,
                      extra_tools: Sequence[str] = ()) -> Project:
    """The project whose rules decide. Its agent.yaml need not be trusted: nothing of it runs here, and its
    MCP servers are not started (calls of their tools cannot be prepared)."""
    request = ProjectRequest(config=None if config is None else str(config), cwd=cwd, tools=tuple(extra_tools))
    return open_project(request, trust=True, will_run=True, tool_servers=False)


def hooks_not_run(project: Project) -> str | None:
    """The note for a check that decides without running anything: hooks that would have had a say."""
    from nami_yaml.config.hooks import PRE_TOOL_USE, hook_specs

    deciding = [spec for spec in hook_specs(project.settings) if spec.event == PRE_TOOL_USE]
    if not deciding:
        return None
    return (f"{len(deciding)} PreToolUse hook{'s' if len(deciding) != 1 else ''} not run here (nothing runs): "
            "they may deny or ask where these decisions allow")


class Decider:
    """``decide(tool, arguments)``: the decision a call would get, or why it is not valid."""

    def __init__(self, project: Project, *, by_hand: bool = False):
        # A dry run's guards: the same policy and fallback, no audit log (nothing runs, so nothing is recorded).
        self.guards = Guards(project, dry_run=True, by_hand=by_hand, run_hooks=False)  # nothing runs here
        self.executor = project.executor()

    def __call__(self, tool: str, arguments: dict[str, Any]) -> Decision | str:
        prepared = self.executor.prepare(tool, arguments)
        if isinstance(prepared, ToolResult):
            return prepared.content.removeprefix(ERROR_PREFIX)
        assert isinstance(prepared, PreparedToolCall)
        decided = self.guards.decide(prepared)
        dry_run = self.guards.dry_run
        who = dry_run.asked(prepared) if decided.action == "ask" and dry_run and dry_run.asked else None
        if who:  # nothing is queued here: say whom the question would go to
            decided = Decision.ask((f"{decided.reason}; " if decided.reason else "") + f"would ask {who}",
                                   decided.source)
        planned = would_plan(prepared, asked=decided.action == "ask") if decided.action != "deny" else None
        if planned:  # nothing runs here either: say what would run before the question (or the tool)
            decided = Decision(decided.action, (f"{decided.reason}; " if decided.reason else "") + planned,
                               decided.source)
        return decided


@dataclass
class PolicyTestReport:
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # the tests file cannot be read, or is not valid

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]


def project_policy_tests(project: Project, decide: Decide | None = None) -> PolicyTestReport:
    """Run the project's ``policy_tests``."""
    config = project.settings.config_file(project.settings.config_path)
    if config is None:
        return PolicyTestReport()
    tests, problems = load_policy_tests(config)
    if problems:
        return PolicyTestReport(problems=problems)
    return PolicyTestReport(run_policy_tests(tests, decide or Decider(project)))


def replay_log(project: Project, lines: Iterable[LogLine]) -> ReplayReport:
    """The audit log's calls of this project's workspace, decided again under its configuration: the model's
    (and MCP clients', batch tasks') calls as the model's are, calls made by hand with the by-hand fallback."""
    deciders: dict[bool, Decider] = {}

    def decide(record: dict[str, Any]) -> Decision | str:
        by_hand = record.get("via") == BY_HAND_VIA
        if by_hand not in deciders:
            deciders[by_hand] = Decider(project, by_hand=by_hand)
        return deciders[by_hand](str(record.get("tool")), record["arguments"])

    return replay(lines, decide, workspace=str(project.context.workspace))
