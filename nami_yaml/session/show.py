"""A session as plain text for a person: ``nami sessions show``. Returns lines; the CLI prints them (and
makes control characters visible)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nami_yaml.display import plural
from nami_yaml.session.cost import money
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.usage import StepUsage, Totals

RESULT_LINES = 6  # lines of a tool result shown; the rest is counted


def format_cost(cost: float | None) -> str:
    return "cost unknown" if cost is None else money(cost)


def _tokens(prompt: int, cached: int, completion: int, reasoning: int, estimated: bool) -> str:
    mark = "~" if estimated else ""
    cached_part = f" ({cached:,} cached)" if cached else ""
    reasoning_part = f" ({reasoning:,} reasoning)" if reasoning else ""
    return f"{mark}{prompt:,} in{cached_part}, {mark}{completion:,} out{reasoning_part}"


def format_step(step: StepUsage) -> str:
    tokens = _tokens(step.prompt_tokens, step.cached_tokens, step.completion_tokens, step.reasoning_tokens,
                     step.estimated)
    return tokens if step.cost is None else f"{tokens}, {format_cost(step.cost)}"


def format_totals(totals: Totals, *, unknown_cost: bool = True) -> str:
    """``12,345 in (10,000 cached), 678 out (120 reasoning), 3 steps, $0.0123``; ``~`` marks estimates.
    ``unknown_cost=False`` leaves the cost out when no price is known (a local model)."""
    tokens = _tokens(totals.prompt_tokens, totals.cached_tokens, totals.completion_tokens, totals.reasoning_tokens,
                     totals.estimated_requests > 0)
    steps = f"{totals.steps} step{'s' if totals.steps != 1 else ''}"
    extra = totals.requests - totals.steps
    if extra:
        steps += f" + {extra} summar{'ies' if extra != 1 else 'y'}"
    cost = ", " + format_cost(totals.known_cost)
    if totals.known_cost is not None and totals.unpriced_requests:
        cost += " (some requests unpriced)"
    if totals.known_cost is None and not unknown_cost:
        cost = ""
    note = ""
    if totals.estimated_requests:
        note = f" (~ estimated: no usage reported for {totals.estimated_requests} of {plural(totals.requests, 'request')})"
    return f"{tokens}, {steps}{cost}{note}"


def call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    return f"{function.get('name', '?')} {function.get('arguments', '')}".rstrip()


def _indented(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in (text.splitlines() or [""])]


def message_lines(message: dict[str, Any]) -> list[str]:
    role = message.get("role")
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    if role == "tool":
        lines = (text or "").splitlines() or [""]
        shown = _indented("\n".join(lines[:RESULT_LINES]), "    ← ")
        if len(lines) > RESULT_LINES:
            shown.append(f"    ← … {plural(len(lines) - RESULT_LINES, 'more line')}")
        return shown
    out = _indented(text, {"user": "› ", "system": "system │ "}.get(str(role), "")) if content else []
    out.extend(f"  → {call_text(call)}" for call in message.get("tool_calls") or [])
    return out


Children = Callable[[str], "LoadedSession | None"]
"""A sub-agent's session by id (None when it is gone), so a parent's session shows it nested."""
MAX_NESTING = 4


def session_lines(session: LoadedSession, children: Children | None = None) -> list[str]:
    header = session.header
    config = session.config
    agent = f" (agent {header['agent']})" if header.get("agent") else ""
    lines = [f"session {session.id}{agent}", f"  created   {header.get('created', '?')}",
             f"  workspace {header.get('workspace', '?')}", f"  model     {config.get('model')} at {config.get('base_url')}",
             f"  totals    {format_totals(session.totals)}", ""]
    return lines + record_lines(session, children)


def record_lines(session: LoadedSession, children: Children | None = None, depth: int = 0) -> list[str]:
    lines: list[str] = []
    for record in session.records:
        kind = record["type"]
        if kind == "message":
            lines.extend(message_lines(record["message"]))
        elif kind == "usage":
            step = StepUsage.from_record(record)
            lines.append(f"    ({'summary' if step.kind == 'compaction' else 'tokens'}: {format_step(step)})")
        elif kind == "replace":
            lines.append(f"── history replaced ({record.get('reason')}): {plural(len(record.get('messages') or []), 'message')} ──")
        elif kind == "compaction":
            what = (f"{plural(record.get('elided', 0), 'old result')} elided" if record.get("stage") == "elide" else
                    f"{plural(record.get('summarised', 0), 'message')} summarised")
            failed = f"; the summary failed: {record['error']}" if record.get("error") else ""
            lines.append(f"── compacted ({record.get('trigger')}): {what}, {record.get('kept', 0)} kept, "
                         f"~{record.get('tokens_before', 0):,} → ~{record.get('tokens_after', 0):,} tokens{failed} ──")
        elif kind == "resume":
            lines.append(f"── continued {record.get('at', '')} ──")
            lines.extend(f"   repaired: {note}" for note in record.get("repairs") or [])
        elif kind == "final":
            error = f": {record['error']}" if record.get("error") else ""
            lines.append(f"── run ended {record.get('at', '')}: {record.get('status')}{error} ──")
        elif kind == "subagent":
            lines.extend(_subagent_lines(record, children, depth))
    return lines


def _subagent_lines(record: dict[str, Any], children: Children | None, depth: int) -> list[str]:
    session_id = record.get("session")
    lines = [f"  ┌ sub-agent {record.get('agent')}: {record.get('status')}"
             f"{f' (session {session_id})' if session_id else ''}"]
    child = children(str(session_id)) if children is not None and session_id and depth < MAX_NESTING else None
    if child is not None:
        lines.extend(f"  │ {line}" for line in record_lines(child, children, depth + 1))
    lines.append("  └")
    return lines
