"""Reading the audit log back (``nami log``): filtering by tool, session, decision and time, and one
readable line per call."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import Effective
from nami_yaml.config.trust import needs_trust, trust_state
from nami_yaml.display import command_line, plural, summarize_arguments
from nami_yaml.policy.audit import configured_path

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based line number in the file
    text: str  # exactly as written, without the newline
    record: dict[str, Any] | None  # None when the line is not a JSON object (cut short by a crash)


@dataclass(frozen=True)
class LogFilter:
    tool: str | None = None  # a name or glob
    session: str | None = None  # an id or its beginning
    decision: str | None = None  # allow | deny
    by: str | None = None  # text in decided_by: "rule", "user", "--yes", "agent.yaml:14"…
    target: str | None = None  # the target the call ran on (agent.yaml targets:)
    since: datetime | None = None
    until: datetime | None = None
    workspace: str | None = None  # a workspace folder, as the log records it (resolved)

    def matches(self, record: dict[str, Any]) -> bool:
        return self.matches_all_but_workspace(record) and self.in_workspace(record)

    def in_workspace(self, record: dict[str, Any]) -> bool:
        return self.workspace is None or record.get("workspace") == self.workspace

    def matches_all_but_workspace(self, record: dict[str, Any]) -> bool:
        if self.tool and not fnmatch.fnmatchcase(str(record.get("tool")), self.tool):
            return False
        if self.session and not str(record.get("session", "")).startswith(self.session):
            return False
        if self.decision and record.get("decision") != self.decision:
            return False
        if self.by and self.by not in str(record.get("decided_by") or ""):
            return False
        if self.target and record.get("target") != self.target:
            return False
        if self.since or self.until:
            when = parse_time(record.get("time"))
            if when is None or (self.since and when < self.since) or (self.until and when > self.until):
                return False
        return True


def readable_path(effective: Effective) -> tuple[Path, str | None]:
    """The log ``nami log`` reads, and a note when it is not the configured one: an agent.yaml that is not
    trusted does not choose it (a repository could ship a history of its own making), as its rules decide
    nothing; then the user config's audit.path, or the default, is read."""
    setting = effective.audit.path
    project = str(effective.config_path) if effective.config_path else None
    if not setting or effective.origin("audit.path") != project or not needs_trust(effective) \
            or trust_state(effective).trusted:
        return configured_path(setting), None
    own = [f.data["audit"]["path"] for f in effective.files if str(f.path) != project
           and isinstance(f.data.get("audit"), dict) and f.data["audit"].get("path")]
    path = configured_path(own[-1] if own else None)
    return path, (f"nami: ignoring audit.path {setting} of {project}: that agent.yaml is not trusted "
                  f"(`nami trust`); reading {path}")


def read_log(path: Path) -> Iterator[LogLine]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            text = raw.decode("utf-8", "replace").rstrip("\n")
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except ValueError:
                record = None
            yield LogLine(number, text, record if isinstance(record, dict) else None)


def parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.astimezone()


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """``30m``, ``2h``, ``7d``, ``1w`` ago, or an ISO date or time (local unless it names a zone)."""
    now = now or datetime.now(timezone.utc)
    relative = _RELATIVE.match(text.strip())
    if relative:
        return now - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
    when = parse_time(text.strip())
    if when is None:
        raise ValueError(f"{text!r} is not a time: give e.g. 30m, 2h, 7d, 2025-01-31 or 2025-01-31T14:00")
    return when


def describe(record: dict[str, Any], width: int = 160) -> str:
    """What ran: the argv for a command, each stage's for a pipeline, else the tool and its arguments."""
    plan = record.get("plan") or {}
    kind = plan.get("kind")
    # (a pipeline's record written before its stages were: its argv is nami's launcher, its arguments say more)
    if isinstance(plan.get("argv"), list) and (kind == "command" or kind == "pipeline" and "pipeline" in plan):
        text = command_line(plan)
    elif isinstance(record.get("arguments"), dict):
        text = f"{record.get('tool')} {summarize_arguments(record['arguments'], limit=width)}".rstrip()
    else:
        text = f"{record.get('tool')} (arguments not valid)"
    return text if len(text) <= width else text[: width - 1] + "…"


def local_time(record: dict[str, Any]) -> str:
    when = parse_time(record.get("time"))
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S") if when else "????-??-?? ??:??:??"


def tool_on_target(record: dict[str, Any]) -> str:
    return str(record.get("tool")) + (f" on {record['target']}" if record.get("target") else "")


def format_record(record: dict[str, Any]) -> str:
    parts = [local_time(record), f"{record.get('status', '?'):<7}", tool_on_target(record), describe(record)]
    if record.get("status") == "ran":
        outcome = f"exit {record['exit_code']}" if record.get("exit_code") is not None else (
            "ok" if record.get("ok") else "failed")
        parts.append(f"→ {outcome}, {record.get('duration') or 0:.2f} s, {plural(record.get('output_bytes', 0), 'byte')}")
        parts += [flag.replace("_", " ") for flag in ("timed_out", "interrupted") if record.get(flag)]
    if record.get("decided_by"):
        parts.append(f"by {record['decided_by']}")
    if record.get("status") in ("denied", "notify failed") and record.get("reason"):
        parts.append(f"({record['reason']})")
    return "  ".join(parts)


def session_header(record: dict[str, Any]) -> str:
    via = f"{record.get('via')} for {record['client']}" if record.get("client") else record.get("via")
    return (f"session {record.get('session')} ({via}, {record.get('user')}@{record.get('host')}, "
            f"{record.get('workspace')})")
