"""An incident timeline of a session (``nami sessions export ID --timeline``): each step with its time, the
model's reasoning text, each call with its target, decision and who decided (from the audit log, joined by
session and call id), the first lines of its result, approvals with who and when, sub-agents nested, and
the answer. As JSON (for tools that build postmortems), Markdown, or a self-contained HTML page.

Rendered safely, as the HTML export is: every text from the session or the log is escaped in HTML, and in
Markdown sits inside a code span or a fenced block longer than any run of backticks it holds, with control
and invisible characters shown as escapes, so a tool result cannot add headings, links or HTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from html import escape
from typing import Any

from nami_yaml.display import visible
from nami_yaml.session.export import POLICY, STYLE
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.replay import text_of
from nami_yaml.session.show import MAX_NESTING, Children

RESULT_LINES = 5  # of each call's result
AuditIndex = dict[tuple[str, str], dict[str, Any]]  # (session, call id) -> its audit record


def audit_index(records: Iterable[dict[str, Any]], sessions: set[str] | None = None) -> AuditIndex:
    return {(str(r.get("session")), str(r.get("call_id"))): r for r in records
            if sessions is None or r.get("session") in sessions}


def session_ids(session: LoadedSession, children: Children | None, depth: int = 0) -> set[str]:
    """The session and its sub-agents' sessions, nested: whose audit records the timeline reads."""
    found = {session.id}
    for record in session.records:
        if record["type"] == "subagent" and children is not None and depth < MAX_NESTING:
            child = children(str(record.get("session")))
            if child is not None:
                found |= session_ids(child, children, depth + 1)
    return found


def build_timeline(session: LoadedSession, audit: AuditIndex, children: Children | None = None,
                   depth: int = 0) -> dict[str, Any]:
    config = session.config
    return {"session": session.id, "agent": session.header.get("agent"), "created": session.header.get("created"),
            "workspace": session.header.get("workspace"), "model": config.get("model"),
            "events": _events(session, audit, children, depth)}


def _events(session: LoadedSession, audit: AuditIndex, children: Children | None, depth: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}  # call id -> its entry, for its result
    step = 0
    for record in session.records:
        kind = record["type"]
        message = record.get("message") if kind == "message" else None
        if isinstance(message, dict):
            role = message.get("role")
            if role == "user" and isinstance(message.get("content"), str):
                events.append({"kind": "prompt", "text": message["content"]})
            elif role == "assistant" and message.get("tool_calls"):
                step += 1
                entries = [_call(session.id, call, audit) for call in message["tool_calls"] if isinstance(call, dict)]
                calls.update((entry["id"], entry) for entry in entries)
                times = [e["time"] for e in entries if e.get("time")]
                events.append({"kind": "step", "step": step, "time": min(times) if times else None,
                               "reasoning": _reasoning(message), "calls": entries})
            elif role == "assistant":
                events.append({"kind": "answer", "text": text_of(message.get("content")),
                               "reasoning": message.get("reasoning_content") or None})
            elif role == "tool" and str(message.get("tool_call_id")) in calls:
                lines = text_of(message.get("content")).splitlines()
                calls[str(message["tool_call_id"])]["result"] = lines[:RESULT_LINES]
                calls[str(message["tool_call_id"])]["result_lines"] = len(lines)
        elif kind == "subagent":
            child = children(str(record.get("session"))) if children is not None and depth < MAX_NESTING else None
            ran = {"agent": record.get("agent"), "status": record.get("status"), "session": record.get("session"),
                   "timeline": build_timeline(child, audit, children, depth + 1) if child else None}
            # Nested under the call that handed it the task (its record follows that call's step).
            spawner = next((c for c in reversed(calls.values())
                            if c["tool"] == f"agent__{ran['agent']}" and "subagent" not in c), None)
            if spawner is not None:
                spawner["subagent"] = ran
            else:
                events.append({"kind": "subagent", **ran})
        elif kind == "final":
            events.append({"kind": "end", "time": record.get("at"), "status": record.get("status"),
                           "error": record.get("error")})
    return events


def _reasoning(message: dict[str, Any]) -> str | None:
    parts = [message.get("reasoning_content"), text_of(message.get("content"))]
    text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return text or None


def _call(session: str, call: dict[str, Any], audit: AuditIndex) -> dict[str, Any]:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    raw = str(function.get("arguments") or "")
    try:
        arguments: Any = json.loads(raw or "{}")
    except ValueError:
        arguments = raw
    entry: dict[str, Any] = {"id": str(call.get("id")), "tool": function.get("name"), "arguments": arguments}
    line = audit.get((session, entry["id"]))
    if line is None:
        entry["decision"] = None  # not in the audit log read (another machine's, or a dry run)
        return entry
    entry.update(time=line.get("started") or line.get("time"), target=line.get("target"),
                 status=line.get("status"), decision=line.get("decision"), decided_by=line.get("decided_by"),
                 reason=line.get("reason"), duration=line.get("duration"), exit_code=line.get("exit_code"),
                 audit_hash=line.get("hash"))
    if line.get("asked_by") is not None:  # the policy asked, and someone answered
        entry["approval"] = {"asked_by": line.get("asked_by"), "answered_by": line.get("decided_by"),
                             "answer": line.get("decision"),
                             "at": line.get("approved_at") or line.get("started") or line.get("time"),
                             **{key: line[key] for key in ("approved_by", "approver") if key in line}}
    return entry


# -- Markdown --------------------------------------------------------------------------------------------

def _code(text: Any) -> str:
    """An inline code span that holds ``text`` whatever it holds."""
    shown = " ".join(visible(str(text)).split())
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {shown} {fence}"


def _block(text: str, indent: str = "") -> list[str]:
    shown = visible(text).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return [indent + fence, *(indent + line for line in shown.splitlines()), indent + fence]


def _decision(call: dict[str, Any]) -> str:
    if call.get("decision") is None:
        return "no audit record"
    text = f"{call.get('status')}, {call.get('decision')}"
    if call.get("decided_by"):
        text += f" by {_code(call['decided_by'])}"
    if call.get("reason"):
        text += f" ({_code(call['reason'])})"
    return text


def timeline_markdown(timeline: dict[str, Any], depth: int = 0) -> str:
    indent = "  " * depth
    lines = [] if depth else [f"# Timeline of session {_code(timeline['session'])}", "",
                              f"- created: {_code(timeline.get('created'))}",
                              f"- workspace: {_code(timeline.get('workspace'))}",
                              f"- model: {_code(timeline.get('model'))}", ""]
    for event in timeline["events"]:
        kind = event["kind"]
        if kind == "prompt":
            lines += [f"{indent}- **task**:", *_block(event["text"], indent + "  ")]
        elif kind == "step":
            lines.append(f"{indent}- **step {event['step']}** at {_code(event.get('time') or 'unknown')}")
            if event.get("reasoning"):
                lines += [f"{indent}  - reasoning:", *_block(event["reasoning"], indent + "    ")]
            for call in event["calls"]:
                target = f" on {_code(call['target'])}" if call.get("target") else ""
                arguments = _code(json.dumps(call["arguments"], ensure_ascii=False))
                lines.append(f"{indent}  - call {_code(call['tool'])} {arguments}{target}: {_decision(call)}")
                if call.get("approval"):
                    approval = call["approval"]
                    lines.append(f"{indent}    - approval: asked by {_code(approval['asked_by'])}, answered "
                                 f"{_code(approval['answer'])} by {_code(approval['answered_by'])} at "
                                 f"{_code(approval['at'])}")
                if call.get("result") is not None:
                    shown, total = len(call["result"]), call["result_lines"]
                    label = f" (first {shown} of {total} lines)" if total > shown else ""
                    lines += [f"{indent}    - result{label}:", *_block("\n".join(call["result"]), indent + "      ")]
                if call.get("subagent"):
                    lines += _subagent_markdown(call["subagent"], indent + "    ", depth + 3)
        elif kind == "subagent":
            lines += _subagent_markdown(event, indent, depth + 1)
        elif kind == "answer":
            lines += [f"{indent}- **answer**:", *_block(event["text"] or "(empty)", indent + "  ")]
        elif kind == "end":
            error = f" ({_code(event['error'])})" if event.get("error") else ""
            lines.append(f"{indent}- run ended at {_code(event.get('time'))}: {_code(event.get('status'))}{error}")
    return "\n".join(lines) + ("\n" if not depth else "")


def _subagent_markdown(ran: dict[str, Any], indent: str, depth: int) -> list[str]:
    lines = [f"{indent}- **sub-agent** {_code(ran.get('agent'))}: {_code(ran.get('status'))}, session "
             f"{_code(ran.get('session'))}"]
    if ran.get("timeline"):
        lines.append(timeline_markdown(ran["timeline"], depth))
    return lines


# -- HTML ------------------------------------------------------------------------------------------------

def _html_events(timeline: dict[str, Any]) -> str:
    parts: list[str] = ["<ol class=\"timeline\">"]
    for event in timeline["events"]:
        kind = event["kind"]
        if kind == "prompt":
            parts.append(f'<li class="msg user"><div class="role">task</div><pre>{escape(event["text"])}</pre></li>')
        elif kind == "step":
            calls = "".join(_html_call(call) for call in event["calls"])
            reasoning = f"<pre>{escape(event['reasoning'])}</pre>" if event.get("reasoning") else ""
            parts.append(f'<li class="msg assistant"><div class="role">step {event["step"]} at '
                         f'{escape(str(event.get("time") or "unknown"))}</div>{reasoning}<ul>{calls}</ul></li>')
        elif kind == "subagent":
            parts.append(f"<li>{_html_subagent(event)}</li>")
        elif kind == "answer":
            parts.append(f'<li class="msg assistant"><div class="role">answer</div><pre>{escape(event["text"])}</pre></li>')
        elif kind == "end":
            error = f" ({escape(str(event['error']))})" if event.get("error") else ""
            parts.append(f'<li class="mark">run ended at {escape(str(event.get("time")))}: '
                         f'{escape(str(event.get("status")))}{error}</li>')
    return "".join(parts) + "</ol>"


def _html_subagent(ran: dict[str, Any]) -> str:
    inner = _html_events(ran["timeline"]) if ran.get("timeline") else ""
    return (f'<div class="subagent"><div class="role">sub-agent {escape(str(ran.get("agent")))}: '
            f'{escape(str(ran.get("status")))}</div><div class="nested">{inner}</div></div>')


def _html_call(call: dict[str, Any]) -> str:
    decision = "no audit record" if call.get("decision") is None else (
        f"{call.get('status')}, {call.get('decision')}"
        + (f" by {call['decided_by']}" if call.get("decided_by") else "")
        + (f" ({call['reason']})" if call.get("reason") else ""))
    target = f" on {call['target']}" if call.get("target") else ""
    approval = ""
    if call.get("approval"):
        a = call["approval"]
        approval = (f"<div>approval: asked by {escape(str(a['asked_by']))}, answered {escape(str(a['answer']))} "
                    f"by {escape(str(a['answered_by']))} at {escape(str(a['at']))}</div>")
    result = f"<pre>{escape(chr(10).join(call['result']))}</pre>" if call.get("result") is not None else ""
    arguments = json.dumps(call["arguments"], ensure_ascii=False)
    nested = _html_subagent(call["subagent"]) if call.get("subagent") else ""
    return (f'<li class="call"><code>{escape(str(call["tool"]))} {escape(arguments)}</code>{escape(target)}: '
            f"{escape(decision)}{approval}{result}{nested}</li>")


def timeline_html(timeline: dict[str, Any]) -> str:
    title = f"nami timeline of session {timeline['session']}"
    facts = [("created", timeline.get("created")), ("workspace", timeline.get("workspace")),
             ("model", timeline.get("model"))]
    listing = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            f'<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>"
            f"<dl>{listing}</dl>\n<main>\n{_html_events(timeline)}\n</main></body></html>\n")
