"""Asking the user before a write or exec tool runs, as agent.yaml's ``permissions`` say."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from typing import Any, TextIO

from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.display import visible

MAX_LINES_SHOWN = 60


def arguments_view(arguments: dict[str, Any], *, shorten: bool) -> list[str]:
    """One line per argument; multi-line text shown as text. Only a write's content is shortened (its
    path and size are what matter there); a command is always shown whole."""
    lines = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            text = visible(value.removesuffix("\n")).split("\n")  # escaped first: \r or \x85 are no line breaks
            lines.append(f"    {key}: ({len(value):,} characters, {len(text):,} lines)")
            shown = text[:MAX_LINES_SHOWN] if shorten else text
            lines.extend(f"    | {line}" for line in shown)
            if len(text) > len(shown):
                lines.append(f"    | … {len(text) - len(shown):,} more lines")
        else:
            lines.append(f"    {key}: {visible(json.dumps(value, ensure_ascii=False))}")
    return lines


def approval_text(call: PreparedCall) -> str:
    """Everything that will run, in full: the user approves what they see, so nothing is summarised,
    and control characters are shown escaped so a value cannot repaint the prompt."""
    plan: dict[str, Any] | None = getattr(call, "plan", lambda: None)()
    lines = [f"{call.risk} tool {call.name} wants to run:"]
    reason = getattr(call, "risk_reason", None)
    if reason:  # a write raised to exec: say why before what
        lines.append(f"  (exec approval: it {visible(reason)})")
    if plan and "argv" in plan:
        argv = plan["argv"]
        if len(argv) > 4 and argv[3] == "-c" and argv[-1] == call.name and "--norc" in argv:
            lines.append("  the tool's bash script, with arguments:")
            lines.extend(arguments_view(call.arguments, shorten=False))
        else:
            lines.append(f"  {visible(shlex.join(argv))}")
        lines.append(f"  in {visible(plan['cwd'])}")
        if plan.get("stdin") is not None:
            lines.append("  with stdin:")
            lines.extend(f"  | {line}" for line in visible(plan["stdin"]).split("\n"))
    else:
        lines.append("  arguments:")
        lines.extend(arguments_view(call.arguments, shorten=call.risk == "write"))
    return "\n".join(lines)


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
            out.write(f"  not approved (no terminal; use --yes to allow): {visible(call.describe())}\n")
            return False
        out.write(f"\n{approval_text(call)}\nRun it? [y/N] ")
        out.flush()
        answer = source.readline()
        return answer.strip().lower() in ("y", "yes")

    return approve
