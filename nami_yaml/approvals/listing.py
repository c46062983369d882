"""What ``nami approvals --json``, ``show --json`` and the approvals page (``nami approvals serve``) show of a
queue entry: the pending file as the run wrote it (already redacted as the audit log is, queue.py's
``pending_record``), its state now, and who has approved so far. One shape for all of them, so the page
shows nothing the command line would not."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any

from nami_yaml.approvals.answering import state_of
from nami_yaml.approvals.store import PENDING, QueueFolder, Stored


def entry(data: Mapping[str, Any], state: str) -> dict[str, Any]:
    """A queue entry as shown: its fields, its state, the call's plan details under ``plan_details``."""
    return {**{k: v for k, v in data.items() if k != "details"}, "state": state, "plan_details": data.get("details")}


def shown(stored: Stored) -> dict[str, Any]:
    return entry(stored.data, state_of(stored))


def entries(folder: QueueFolder, *, show_all: bool = False) -> list[dict[str, Any]]:
    """The entries of ``folder``: the pending ones (``show_all``: those ended too), oldest first."""
    found = [shown(stored) for stored in folder.listing()]
    return [item for item in found if show_all or item["state"] == PENDING]


def age(created: Any, now: float | None = None) -> str:
    """How long ago ``created`` (Unix seconds) was: ``42s``, ``5m``, ``1h05m``; ``?`` when unknown."""
    if not isinstance(created, (int, float)):
        return "?"
    seconds = max(0, int((time.time() if now is None else now) - created))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def approved_by(data: Mapping[str, Any]) -> str:
    """Who has approved so far, and how (``alice (token, as OS user ann) (1 of 2)``)."""
    given = [f"{a.get('who')} ({a.get('how')})" for a in data.get("approvals") or [] if a.get("answer") == "approve"]
    need = data.get("required") or 1
    return (", ".join(given) or "nobody yet") + (f" ({len(given)} of {need})" if need > 1 else "")


def approver_named(token: str, approvers: Mapping[str, str]) -> str | None:
    """The named approver (``approvals.approvers``) whose token's SHA-256 is listed, or None."""
    given = hashlib.sha256(token.encode()).hexdigest()
    for name, expected in approvers.items():
        if expected and hmac.compare_digest(given, expected):
            return name
    return None
