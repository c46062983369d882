"""The approval prompt on a terminal: what the policy decided to ask about (and which rule asks), shown in
full, answered by one key: yes once, yes for the session, no, or no with a reason for the model. A write
to a file is shown as the diff it would make (nami_yaml.diffs), coloured when the terminal takes colours.

The decision to ask is the policy's (nami_yaml.policy); this module only asks.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from nami_yaml.agent.hooks import Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.approvals.plans import MAX_PLAN_LINES, shown_plan
from nami_yaml.cli.style import Paint, terminal
from nami_yaml.diffs import FileChange, preview_call
from nami_yaml.display import command_line, plural, visible, visible_line
from nami_yaml.policy.approval import ESCALATE_SOURCE, ApprovalRequest, Approver
from nami_yaml.runners.sandbox.describe import sandbox_line

# One question on the terminal at a time, whichever agent asks: two sub-agents running in parallel asked at
# once, and one key answered the other agent's call (issue 40, item 6). The terminal is one; so is the lock.
TERMINAL = threading.Lock()

MAX_LINES_SHOWN = 60
MAX_DIFF_SHOWN = 80  # diff lines shown before [v] is offered to see the rest


def arguments_view(arguments: dict[str, Any], *, shorten: bool) -> list[str]:
    """One line per argument; multi-line text shown as text. Only a write's content is shortened (its
    path and size are what matter there); a command is always shown whole."""
    lines = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            text = visible(value.removesuffix("\n")).split("\n")  # escaped first: \r or \x85 are no line breaks
            lines.append(f"    {key}: ({plural(len(value), 'character')}, {plural(len(text), 'line')})")
            shown = text[:MAX_LINES_SHOWN] if shorten else text
            lines.extend(f"    | {line}" for line in shown)
            if len(text) > len(shown):
                lines.append(f"    | … {plural(len(text) - len(shown), 'more line')}")
        else:
            lines.append(f"    {key}: {visible(json.dumps(value, ensure_ascii=False))}")
    return lines


NO_PAINT = Paint(False)


def approval_text(call: PreparedCall, paint: Paint = NO_PAINT, *, whole: bool = False) -> str:
    """Everything that will run, in full: the user approves what they see, so nothing is summarised,
    and control characters are shown escaped so a value cannot repaint the prompt. A file write is
    shown as its diff (``whole``: every line of it), with the exact arguments where a diff cannot say it."""
    return "\n".join(approval_lines(call, preview_call(call), paint, whole=whole))


def approval_lines(call: PreparedCall, change: FileChange | None, paint: Paint, *, whole: bool) -> list[str]:
    plan = call.plan()
    target = getattr(call, "target", None)
    if target is None:
        lines = [paint.bold(f"{call.risk} tool {call.name} wants to run:")]
    else:  # which environment it acts on is the first thing to read: the right command on the wrong one is the fear
        lines = [paint.bold(f"{call.risk} tool {call.name} wants to run on target ")
                 + paint(visible_line(str(target)), "bold", "magenta") + paint.bold(":")]
    reason = getattr(call, "risk_reason", None)
    if reason:  # a write raised to exec: say why before what
        lines.append(paint.yellow(f"  (exec approval: it {visible(reason)})"))
    if change is not None:
        lines.extend(change_view(change, paint, whole=whole))
        if change.exact or change.action == "fail":
            lines.append("  arguments:")
            lines.extend(arguments_view(call.arguments, shorten=not change.exact))
    elif "argv" in plan:
        if call.kind == "script":
            lines.append("  the tool's bash script, with arguments:")
            lines.extend(arguments_view(call.arguments, shorten=False))
        else:
            lines.append(f"  {visible_line(command_line(plan))}")  # a newline in a value cannot fake a line
        lines.append(f"  in {visible(plan['cwd'])}")
        if plan.get("stdin") is not None:
            lines.append("  with stdin:")
            lines.extend(f"  | {line}" for line in visible(plan["stdin"]).split("\n"))
    else:
        lines.append("  arguments:")
        lines.extend(arguments_view(call.arguments, shorten=call.risk == "write"))
    sandbox = sandbox_line(plan)
    if sandbox is not None:
        lines.append(f"  {visible_line(sandbox)}")
    lines.extend(plan_lines(call, paint, whole=whole))
    return lines


def plan_lines(call: PreparedCall, paint: Paint, *, whole: bool = False) -> list[str]:
    """The output of the call's plan step (a tool with ``plan:``), which is what the yes approves."""
    planned = shown_plan(call)
    if planned is None:
        return []
    lines = [paint.bold("  its plan") + f" ({visible_line(planned.command)}):"]
    text = visible(planned.text.rstrip("\n")).split("\n") if planned.text.strip() else ["(no output)"]
    shown = text if whole else text[:MAX_PLAN_LINES]
    lines.extend(f"  | {line}" for line in shown)
    if len(text) > len(shown):
        lines.append(paint.dim(f"  … {plural(len(text) - len(shown), 'more line')} ([v] shows them)"))
    if planned.saved:
        lines.append(paint.dim(f"  (the whole plan: {visible_line(planned.saved)})"))
    lines.append(paint.dim(f"  (the yes binds this plan: sha256 {planned.sha256})"))
    return lines


def change_view(change: FileChange, paint: Paint, *, whole: bool = False) -> list[str]:
    """A file change as a reviewer reads it: what happens to which file, +/- counts, notes, the diff."""
    path = visible_line(change.path)  # a newline in a name cannot fake a line of the diff
    if change.action == "fail":
        return [f"  {paint.red('would fail')}: " + visible(change.error or "").replace("\n", "\n    ")]
    counts = f"{paint.green(f'+{change.added}')} {paint.red(f'-{change.removed}')}"
    if change.action == "create":
        head = f"  create {paint.bold(path)}: {plural(change.new_bytes, 'byte')}, {plural(change.new_lines, 'line')}"
    else:
        verb = "edit" if change.action == "edit" else "overwrite"
        head = f"  {verb} {paint.bold(path)}: {counts}"
    lines = [head]
    lines.extend(f"  ({visible_line(note)})" for note in change.notes)
    shown = change.diff if whole else change.diff[:MAX_DIFF_SHOWN]
    lines.extend("  " + _diff_line(line, paint) for line in shown)
    hidden = len(change.diff) - len(shown)
    if hidden:
        lines.append(paint.dim(f"  … {hidden:,} more diff lines ([v] shows them)"))
    if change.more_lines:
        lines.append(paint.dim(f"  … {plural(change.more_lines, 'more line')}"))
    return lines


def _diff_line(line: str, paint: Paint) -> str:
    text = visible(line)
    if line.startswith(("+++", "---")):
        return paint.bold(text)
    if line.startswith("@@"):
        return paint.cyan(text)
    if line.startswith("+"):
        return paint.green(text)
    if line.startswith("-"):
        return paint.red(text)
    if line.startswith("\\"):
        return paint.dim(text)
    return text


PROMPT = "Run it? [y] yes once, [a] yes to these same arguments for this session, [N] no, [r] no with a reason: "
MORE = " [v] whole diff"
MORE_PLAN = " [v] whole plan"


def _long_plan(call: PreparedCall) -> bool:
    planned = shown_plan(call)
    return planned is not None and planned.text.count("\n") > MAX_PLAN_LINES


def why_asked(pending: Decision) -> str | None:
    """The line saying which setting or rule asks, and why (for rules that give a reason)."""
    if not pending.source and not pending.reason:
        return None
    who = f"asked by {pending.source}" if pending.source else "asked"
    return visible(f"  ({who}{': ' + pending.reason if pending.reason else ''})")


# The answer each key (or typed word, where keys cannot be read one by one) gives.
ANSWERS = {"y": "yes", "yes": "yes", "a": "always", "always": "always", "r": "reason", "reason": "reason",
           "v": "view", "view": "view"}
SAID = {"yes": "yes", "always": "yes, for this session", "reason": "no, because…", "no": "no"}


def terminal_approver(stdin: TextIO | None = None, err: TextIO | None = None,
                      pause: Callable[[], contextlib.AbstractContextManager[Any]] | None = None) -> Approver:
    """Asks on the terminal: yes once; yes for this tool with these argument values for the rest of the
    session; no; or no with a reason that goes back to the model. One key answers (Enter or anything else
    is no). With no terminal on stdin the answer is no (``--yes`` or ``--approve`` answer before this is
    reached). ``pause`` hides a status line while the question is on screen."""
    source = stdin or sys.stdin
    out = err or sys.stderr

    def approve(request: ApprovalRequest) -> bool | Decision:
        if not source.isatty():
            if request.pending.source == ESCALATE_SOURCE:
                return False  # an offer, not a question the run waits on: without a terminal, nobody saw it
            out.write(f"  not approved (no terminal; use --yes to allow): {visible(request.describe())}\n")
            pending = request.pending
            asked = f"{pending.source} asks" if pending.source else "it needs a yes"
            why = f"{asked}: {pending.reason}" if pending.reason else asked
            return Decision.deny(f"there is no terminal to ask on ({why})", "no approver")
        with TERMINAL, pause() if pause is not None else contextlib.nullcontext():
            return ask(request)  # the question shown is the one the key answers: the next waits its turn

    def ask(request: ApprovalRequest) -> bool | Decision:
        paint = terminal().err
        reason_line = why_asked(request.pending)
        change = preview_call(request.call)
        text = "\n".join(approval_lines(request.call, change, paint, whole=False))
        if request.agent:  # a sub-agent's call: say whose it is before what it is
            text = paint.bold(f"sub-agent {visible(request.agent)} asks:") + "\n" + text
        more = MORE if change is not None and len(change.diff) > MAX_DIFF_SHOWN else (
            MORE_PLAN if _long_plan(request.call) else "")
        out.write(f"\n{text}\n{reason_line + chr(10) if reason_line else ''}")
        while True:
            out.write(paint.bold(PROMPT.rstrip(": ") + more + ": "))
            out.flush()
            key = read_key(source, request.elsewhere)
            if isinstance(key, Decision):  # answered from the approvals queue first
                out.write(f"answered from the queue: {visible_line(key.action)}"
                          f"{' (' + visible_line(key.reason) + ')' if key.reason else ''}\n")
                out.flush()
                return key
            answer = ANSWERS.get(key, "no")
            if answer == "view" and more:
                out.write("\n" + "\n".join(approval_lines(request.call, change, paint, whole=True)) + "\n")
                continue
            if answer == "view":
                answer = "no"
            out.write(SAID[answer] + "\n")
            out.flush()
            if answer == "yes":
                return True
            if answer == "always":
                return request.approve_for_session()
            if answer == "reason":
                out.write("Why not? (the model is told): ")
                out.flush()
                reason = " ".join(source.readline().split())
                return Decision.deny(reason or None, "user")
            return False

    # Whether a person can answer here now: with approvals.via: queue, the queue is asked as well while they
    # can, and alone when they cannot (app/approval_route.py).
    setattr(approve, "interactive", lambda: source.isatty())  # noqa: B010 (an attribute of a function)
    return approve


def read_key(source: TextIO, elsewhere: Callable[[], Decision | None] | None = None) -> str | Decision:
    """One key from a terminal, lower-cased, without waiting for Enter (Ctrl-C still interrupts). Where
    the input cannot be read key by key (not a real terminal), the first word of a line. ``elsewhere``:
    polled while no key is pressed; its answer (from the approvals queue) ends the wait instead of a key."""
    with _cbreak(source) as fd:
        if fd is None:
            words = source.readline().split()
            return words[0].lower() if words else ""
        import os
        import select

        while elsewhere is not None and not select.select([fd], [], [], 0.2)[0]:
            decided = elsewhere()
            if decided is not None:
                return decided
        data = os.read(fd, 1)
        if data == b"\x1b":  # an arrow or function key sends a sequence; drop the rest of it
            _drain(fd)
        return data.decode("utf-8", errors="replace").lower()


@contextlib.contextmanager
def _cbreak(source: TextIO) -> Iterator[int | None]:
    try:
        import termios
        import tty

        fd = source.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):
        yield None
        return
    try:
        termios.tcflush(fd, termios.TCIFLUSH)  # keys pressed while the model was talking do not answer
        tty.setcbreak(fd)
        yield fd
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _drain(fd: int) -> None:
    import os
    import select

    while select.select([fd], [], [], 0.02)[0]:
        if not os.read(fd, 64):
            return
