"""Decisions for every tool call: rules on tool names and typed argument values (``rules``, with bash
command lines parsed in ``bash``), layered over the per-risk defaults (``layers``); approval requests and
session approvals; the audit log (``audit``).

Pure: it decides and records, and never prompts or prints; the CLI (or an API user's callable) answers
what must be asked.
"""

from __future__ import annotations

from nami_yaml.policy.approval import ApprovalRequest, Approver, approve_all, as_asker
from nami_yaml.policy.permissions import DEFAULT_PERMISSIONS, RiskPolicy

__all__ = ["DEFAULT_PERMISSIONS", "ApprovalRequest", "Approver", "RiskPolicy", "approve_all", "as_asker"]
