"""Decisions for every tool call: rules on tool names and typed argument values (``rules``, with bash
command lines parsed in ``bash``), layered over the per-risk defaults (``layers``); approval requests and
session approvals; the audit log (``audit``); which writes amount to running code (``sensitive_paths``).

Pure: it decides and records, and never prompts or prints; the CLI (or an API user's callable) answers
what must be asked. The names below load on first use, so ``nami_yaml.runtime`` can import
``sensitive_paths`` without the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nami_yaml.policy.approval import ApprovalRequest, Approver, approve_all, as_asker
    from nami_yaml.policy.permissions import DEFAULT_PERMISSIONS, RiskPolicy

__all__ = ["DEFAULT_PERMISSIONS", "ApprovalRequest", "Approver", "RiskPolicy", "approve_all", "as_asker"]

_LAZY = {"ApprovalRequest": "approval", "Approver": "approval", "approve_all": "approval", "as_asker": "approval",
         "DEFAULT_PERMISSIONS": "permissions", "RiskPolicy": "permissions"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"nami_yaml.policy.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'nami_yaml.policy' has no attribute {name!r}")
