"""Decisions for every tool call: the per-risk defaults, approval requests, and (later) value rules.

Pure: it decides, and never prompts or prints; the CLI (or an API user's callable) answers what must be
asked.
"""

from __future__ import annotations

from nami_yaml.policy.approval import ApprovalRequest, Approver, approve_all, as_asker
from nami_yaml.policy.permissions import DEFAULT_PERMISSIONS, RiskPolicy

__all__ = ["DEFAULT_PERMISSIONS", "ApprovalRequest", "Approver", "RiskPolicy", "approve_all", "as_asker"]
