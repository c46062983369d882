"""``policy_tests:``: calls with the decision each must get, so rules are checked before a model meets them.

Read from agent.yaml (a list) or from the YAML file it names (a list, relative to agent.yaml). Each test is
decided by a function the front end gives: the one the model's calls are decided by (``app/policy_check``
builds it from the real executor and the guards), so a test passes exactly when a model's call with
those arguments would be decided so. This module reads tests and compares; it decides nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import Decision
from nami_yaml.config.effective import ConfigFile
from nami_yaml.display import summarize_arguments
from nami_yaml.errors import Problem
from nami_yaml.paths import path_for_messages
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, parse_yaml, read_source

KEY = "policy_tests"

Decide = Callable[[str, dict[str, Any]], "Decision | str"]
"""A call's decision, or why the call is not valid (unknown tool, arguments its schema refuses)."""


@dataclass(frozen=True)
class PolicyTest:
    tool: str
    args: dict[str, Any]
    expect: str  # allow | ask | deny
    name: str | None
    doc: Document  # the file it is written in, for positions
    where: JsonPath  # its path there: ("policy_tests", 2) in agent.yaml, (2,) in a file of its own

    def title(self) -> str:
        return self.name or f"{self.tool} {summarize_arguments(self.args)}".rstrip()

    def problem(self, sub: JsonPath, message: str) -> Problem:
        return self.doc.problem((*self.where, *sub), message)


@dataclass(frozen=True)
class Outcome:
    test: PolicyTest
    decision: Decision | None  # None when the call is not valid
    invalid: str | None = None

    @property
    def passed(self) -> bool:
        return self.decision is not None and self.decision.action == self.test.expect

    def verdict(self) -> str:
        """What was decided, and by which rule or setting."""
        if self.decision is None:
            return f"the call is not valid: {self.invalid}"
        by = f" by {self.decision.source}" if self.decision.source else " by no rule (reads run by default)"
        reason = f" ({self.decision.reason})" if self.decision.reason else ""
        return f"{self.decision.action}{by}{reason}"

    def problem(self) -> Problem | None:
        """The failure as ``file:line:col: $.policy_tests[N].expect: …``; None when it passed."""
        if self.passed:
            return None
        if self.decision is None:
            return self.test.problem(("call",), self.verdict())
        return self.test.problem(("expect",), f"expected {self.test.expect}, decided {self.verdict()}")


def load_policy_tests(config: ConfigFile) -> tuple[list[PolicyTest], list[Problem]]:
    """The tests of a project's agent.yaml, and what is wrong with a file of them (agent.yaml itself was
    validated when read)."""
    value = config.data.get(KEY)
    if value is None:
        return [], []
    if isinstance(value, list):
        return _tests(config.doc, value, (KEY,)), []
    return _from_file(config, Path(value))


def _from_file(config: ConfigFile, path: Path) -> tuple[list[PolicyTest], list[Problem]]:
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return [], [config.doc.problem((KEY,), f"cannot read the policy tests {path_for_messages(path)}: {reason}")]
    doc, problems = parse_yaml(text, path_for_messages(path))
    if doc is None:
        return [], problems
    if not isinstance(doc.value, list):
        return [], [doc.problem((), "a policy tests file holds a list of tests ({call: {tool, args}, expect})")]
    check = validator("agent", "policy_test")
    for index, item in enumerate(doc.value):
        problems += problems_for(doc, item, (index,), check)
    return ([], problems) if problems else (_tests(doc, doc.value, ()), [])


def _tests(doc: Document, items: list[dict[str, Any]], base: JsonPath) -> list[PolicyTest]:
    return [PolicyTest(item["call"]["tool"], dict(item["call"].get("args") or {}), item["expect"], item.get("name"),
                       doc, (*base, index)) for index, item in enumerate(items)]


def run_policy_tests(tests: list[PolicyTest], decide: Decide) -> list[Outcome]:
    outcomes = []
    for test in tests:
        decided = decide(test.tool, test.args)
        outcomes.append(Outcome(test, None, decided) if isinstance(decided, str) else Outcome(test, decided))
    return outcomes
