"""``nami log --replay``: the calls of the audit log decided again under a configuration, and each whose
decision would change, so a rule change is reviewed against real history before it lands.

What a line records is compared with what the decide function says now: "was" is the policy's decision
at the time (an ask, when a person, ``--yes`` or ``--approve`` answered it: ``asked_by``), "would be"
the one a call with the same arguments would get. Values of secret-looking parameters were redacted in
the log, so such a call is decided with the redaction in their place: its replay says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.agent.hooks import Decision
from nami_yaml.policy.approval import SESSION_SOURCE
from nami_yaml.policy.audit import REDACTED
from nami_yaml.policy.audit_read import LogLine

# Who answers an ask (lines written before ``asked_by`` was recorded name only them): then the policy asked.
ANSWERS = frozenset({"user", SESSION_SOURCE, "--yes", "no approver"})
BY_HAND_VIA = "tools call"

DecideRecord = Callable[[dict[str, Any]], "Decision | str"]
"""The decision a recorded call would get now (the record says the tool, arguments and who called), or
why it cannot be prepared now (the tool is gone, its arguments no longer valid)."""


@dataclass(frozen=True)
class Replayed:
    number: int  # the line of the log
    record: dict[str, Any]
    was: str  # allow | ask | deny
    was_by: str | None
    now: Decision | None  # None when the call is not valid now
    invalid: str | None = None
    redacted: bool = False  # an argument was redacted in the log: decided with the redaction in its place

    @property
    def changed(self) -> bool:
        return self.now is None or self.now.action != self.was


@dataclass
class ReplayReport:
    replayed: list[Replayed] = field(default_factory=list)
    other_workspaces: int = 0  # lines of other projects' calls, not decided under this one's rules
    not_replayable: int = 0  # invalid calls (never prepared), lines that are not JSON

    @property
    def changes(self) -> list[Replayed]:
        return [r for r in self.replayed if r.changed]

    @property
    def redacted(self) -> int:
        return sum(r.redacted for r in self.replayed)


def was_decided(record: dict[str, Any]) -> tuple[str, str | None]:
    """The policy's own decision at the time, and its source."""
    by = record.get("decided_by")
    if "asked_by" in record:
        return "ask", record["asked_by"]
    if by in ANSWERS or (isinstance(by, str) and by.startswith("--approve ")):
        return "ask", None  # who asked was not recorded then
    return str(record.get("decision")), by


def replay(lines: Iterable[LogLine], decide: DecideRecord, *, workspace: str) -> ReplayReport:
    """Decide again every call of ``workspace`` among ``lines`` (already filtered as the user asked)."""
    report = ReplayReport()
    for line in lines:
        record = line.record
        if record is None or not isinstance(record.get("arguments"), dict) or record.get("decision") is None:
            report.not_replayable += 1
            continue
        if record.get("workspace") != workspace:
            report.other_workspaces += 1
            continue
        was, was_by = was_decided(record)
        decided = decide(record)
        now, invalid = (None, decided) if isinstance(decided, str) else (decided, None)
        report.replayed.append(Replayed(line.number, record, was, was_by, now, invalid,
                                        _holds_redaction(record["arguments"])))
    return report


def _holds_redaction(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_redaction(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_redaction(item) for item in value)
    return value == REDACTED
