"""The approval prompt on a terminal: what the policy decided to ask about (and which rule asks), shown in
full, answered yes once, yes for the session, no, or no with a reason for the model.

The decision to ask is the policy's (nami_yaml.policy); this module only asks.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any, TextIO

from nami_yaml.agent.hooks import Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.display import visible, visible_line
from nami_yaml.policy.approval import ApprovalRequest, Approver

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
    plan = call.plan()
    lines = [f"{call.risk} tool {call.name} wants to run:"]
    reason = getattr(call, "risk_reason", None)
    if reason:  # a write raised to exec: say why before what
        lines.append(f"  (exec approval: it {visible(reason)})")
    if "argv" in plan:
        argv = plan["argv"]
        if call.kind == "script":
            lines.append("  the tool's bash script, with arguments:")
            lines.extend(arguments_view(call.arguments, shorten=False))
        else:
            lines.append(f"  {visible_line(shlex.join(argv))}")  # a newline in a value cannot fake a line
        lines.append(f"  in {visible(plan['cwd'])}")
        if plan.get("stdin") is not None:
            lines.append("  with stdin:")
            lines.extend(f"  | {line}" for line in visible(plan["stdin"]).split("\n"))
    else:
        lines.append("  arguments:")
        lines.extend(arguments_view(call.arguments, shorten=call.risk == "write"))
    return "\n".join(lines)


PROMPT = "Run it? [y] yes once, [a] yes to these same arguments for this session, [N] no, [r] no with a reason: "


def why_asked(pending: Decision) -> str | None:
    """The line saying which setting or rule asks, and why (for rules that give a reason)."""
    if not pending.source and not pending.reason:
        return None
    who = f"asked by {pending.source}" if pending.source else "asked"
    return visible(f"  ({who}{': ' + pending.reason if pending.reason else ''})")


def terminal_approver(stdin: TextIO | None = None, err: TextIO | None = None) -> Approver:
    """Asks on the terminal: yes once; yes for this tool with these argument values for the rest of the
    session; no; or no with a reason that goes back to the model. With no terminal on stdin the answer is
    no (``--yes`` or ``--approve`` answer before this is reached)."""
    source = stdin or sys.stdin
    out = err or sys.stderr

    def approve(request: ApprovalRequest) -> bool | Decision:
        if not source.isatty():
            out.write(f"  not approved (no terminal; use --yes to allow): {visible(request.describe())}\n")
            pending = request.pending
            asked = f"{pending.source} asks" if pending.source else "it needs a yes"
            why = f"{asked}: {pending.reason}" if pending.reason else asked
            return Decision.deny(f"there is no terminal to ask on ({why})", "no approver")
        reason_line = why_asked(request.pending)
        out.write(f"\n{approval_text(request.call)}\n{reason_line + chr(10) if reason_line else ''}{PROMPT}")
        out.flush()
        answer = source.readline().strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("a", "always"):
            return request.approve_for_session()
        if answer in ("r", "reason"):
            out.write("Why not? (the model is told): ")
            out.flush()
            reason = " ".join(source.readline().split())
            return Decision.deny(reason or None, "user")
        return False

    return approve
