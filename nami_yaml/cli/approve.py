"""Asking the user before a write or exec tool runs, as agent.yaml's ``permissions`` say."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from nami_yaml.agent.toolbox import PreparedCall


def make_approver(permissions: dict[str, str], *, assume_yes: bool, stdin: TextIO | None = None,
                  err: TextIO | None = None) -> Callable[[PreparedCall], bool]:
    """``allow`` runs, ``deny`` refuses, ``ask`` prompts on the terminal. With no terminal on stdin the
    answer is no, unless ``--yes`` was given (which answers every ``ask`` with yes, never a ``deny``)."""
    source = stdin or sys.stdin
    out = err or sys.stderr

    def approve(call: PreparedCall) -> bool:
        rule = permissions.get(call.risk, "ask")
        if rule == "allow":
            return True
        if rule == "deny":
            return False
        if assume_yes:
            return True
        if not source.isatty():
            out.write(f"  not approved (no terminal; use --yes to allow): {call.describe()}\n")
            return False
        out.write(f"\n{call.risk} tool wants to run:\n  {call.describe()}\nRun it? [y/N] ")
        out.flush()
        answer = source.readline()
        return answer.strip().lower() in ("y", "yes")

    return approve
