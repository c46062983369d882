"""A session as one self-contained HTML page, for sharing in a review: the conversation in order, tool
calls and their results collapsed, compactions and usage marked.

Self-contained means it loads nothing: no scripts, no fonts, no images, styles inline, and a Content
Security Policy that forbids any fetch even if a browser found something to fetch. Every piece of text
from the session is escaped, so a tool result holding ``<script>`` is shown, never run; the model's
answers are rendered from their Markdown without passing any HTML through (session/markdown_html.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from nami_yaml.display import plural
from nami_yaml.session.compaction import SUMMARY_PREFIX
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.markdown_html import markdown_html
from nami_yaml.session.show import MAX_NESTING, Children, format_step, format_totals
from nami_yaml.session.usage import StepUsage

POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.3rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;color:#555}
dd{margin:0}pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font:13px/1.4 ui-monospace,monospace}
.msg{border-left:4px solid #ccc;padding:.3rem .8rem;margin:.8rem 0}.user{border-color:#2f6fde;background:#f2f6fd}
.assistant{border-color:#1a9c5b}.system{border-color:#999}.role{font-weight:600;font-size:.8rem;color:#666}
details{margin:.3rem 0 .3rem 1rem}summary{cursor:pointer;font:13px ui-monospace,monospace;color:#444}
.result summary{color:#6a4c93}.error summary{color:#b3261e}.mark{color:#777;font-size:.85rem;margin:.6rem 0;
text-align:center}.usage{color:#888;font-size:.8rem;margin-left:1rem}
.nested{border-left:2px dashed #bbb;padding-left:.8rem}
.md p,.md ul,.md ol{margin:.3rem 0}.md pre{background:#f6f6f6;padding:.4rem}.md code{font:13px ui-monospace,monospace}
.md table{border-collapse:collapse}.md th,.md td{border:1px solid #ddd;padding:.15rem .5rem}.url{color:#888}
.md blockquote{border-left:3px solid #ddd;margin:.3rem 0;padding-left:.6rem;color:#555}
"""


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _arguments(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), ensure_ascii=False, indent=2)
    except ValueError:
        return raw


class _Page:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.call_names: dict[str, str] = {}

    def message(self, message: dict[str, Any]) -> None:
        role = str(message.get("role"))
        content = message.get("content")
        text = content if isinstance(content, str) else ("" if content is None else json.dumps(content))
        if role == "system":
            self.parts.append(f'<details class="msg system"><summary>system prompt ({plural(len(text), "character")})'
                              f"</summary>{_pre(text)}</details>")
            return
        if role == "tool":
            name = self.call_names.get(str(message.get("tool_call_id")), "tool")
            css = "result error" if text.startswith("Error") else "result"
            lines = text.count("\n") + 1 if text else 0
            self.parts.append(f'<details class="{css}"><summary>← {escape(name)}: {escape(_short(text, 80))} '
                              f"({lines:,} line{'s' if lines != 1 else ''})</summary>{_pre(text)}</details>")
            return
        # The model's text as it reads on the terminal, rendered; what a person typed stays as typed.
        body = (f'<div class="md">{markdown_html(text)}</div>' if role == "assistant" else _pre(text)) if text else ""
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = str(function.get("name", "?"))
            self.call_names[str(call.get("id"))] = name
            arguments = str(function.get("arguments", ""))
            body += (f'<details class="call"><summary>→ {escape(name)} {escape(_short(arguments))}</summary>'
                     f"{_pre(_arguments(arguments))}</details>")
        self.parts.append(f'<section class="msg {escape(role)}"><div class="role">{escape(role)}</div>{body}</section>')

    def mark(self, text: str) -> None:
        self.parts.append(f'<div class="mark">— {escape(text)} —</div>')


def render_html(session: LoadedSession, children: Children | None = None) -> str:
    """The page; ``children`` finds sub-agents' sessions, shown nested where they ran."""
    page = _Page()
    page.parts.extend(_records_html(session, children, 0))
    return _document(session, page)


def _records_html(session: LoadedSession, children: Children | None, depth: int) -> list[str]:
    page = _Page()
    for record in session.records:
        kind = record["type"]
        if kind == "message":
            page.message(record["message"])
        elif kind == "usage":
            step = StepUsage.from_record(record)
            label = "summary" if step.kind == "compaction" else "tokens"
            page.parts.append(f'<div class="usage">{label}: {escape(format_step(step))}</div>')
        elif kind == "replace":
            page.mark(f"history replaced ({record.get('reason')}); the next request sends "
                      f"{plural(len(record.get('messages') or []), 'message')}")
            if record.get("reason") in ("compaction", "repair"):
                for message in record.get("messages") or []:
                    if message.get("role") == "user" and str(message.get("content", "")).startswith(SUMMARY_PREFIX):
                        page.message(message)
        elif kind == "resume":
            page.mark(f"continued {record.get('at', '')}")
        elif kind == "final":
            error = f": {record['error']}" if record.get("error") else ""
            page.mark(f"run ended {record.get('at', '')}: {record.get('status')}{error}")
        elif kind == "subagent":
            session_id = record.get("session")
            child = children(str(session_id)) if children and session_id and depth < MAX_NESTING else None
            inner = "\n".join(_records_html(child, children, depth + 1)) if child is not None else ""
            page.parts.append(f'<details class="subagent"><summary>sub-agent {escape(str(record.get("agent")))}: '
                              f'{escape(str(record.get("status")))}</summary><div class="nested">{inner}</div></details>')
    return page.parts


def _document(session: LoadedSession, page: _Page) -> str:
    header = session.header
    config = session.config
    facts = [("created", header.get("created")), ("workspace", header.get("workspace")),
             ("model", f"{config.get('model')} at {config.get('base_url')}"), ("totals", format_totals(session.totals))]
    listing = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts)
    title = f"nami session {session.id}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            f'<meta name="referrer" content="no-referrer"><meta name="viewport" content="width=device-width">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>"
            f"<dl>{listing}</dl>\n<main>\n" + "\n".join(page.parts) + "\n</main></body></html>\n")


def export_html(session: LoadedSession, target: Path, children: Children | None = None) -> None:
    """Write the page atomically (:func:`write_private`)."""
    write_private(Path(target), render_html(session, children))


def write_private(target: Path, text: str) -> None:
    """Write ``text`` atomically: ``target`` is the whole page or untouched, never half of one. Private to
    the user (0600), like the session: tool output may hold what nobody else should read."""
    folder = target.parent if str(target.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
