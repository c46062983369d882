"""The line worth showing from a server's error body.

Servers answer a bad request in many shapes: OpenAI's ``{"error": {"message", "param"}}``, FastAPI's
``{"detail": [{"loc", "msg"}]}``, a Python server's repr of seven pydantic errors in one message, an
HTML page from a proxy. The user needs the first message that explains something, short, and which
field of the request the server refused.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DETAIL = 300

# Errors that only say "this was not the other kind of message" when a union of message types fails;
# the useful one is the error about the field that actually broke every variant.
_UNION_NOISE = frozenset({"literal_error", "union_tag_invalid", "union_tag_not_found", "missing"})

_REPR_ERROR = re.compile(
    r"""['"]type['"]\s*:\s*['"](?P<type>[\w.]+)['"]\s*,\s*"""
    r"""['"]loc['"]\s*:\s*[(\[](?P<loc>[^)\]]*)[)\]]\s*,\s*"""
    r"""['"]msg['"]\s*:\s*(?P<q>['"])(?P<msg>.*?)(?P=q)""")
_TEXT_ERROR = re.compile(r"^(?P<loc>\S[^\n]*)\n[ \t]+(?P<msg>[^\n]+?)\s*\[type=(?P<type>\w+)", re.M)
_TAGS = re.compile(r"<[^>]+>")


def server_detail(body: Any, fallback: str) -> str:
    """One short line: the first meaningful message, ``(field messages[1].content; 6 more problems)``."""
    message, field = _message_and_field(body)
    errors = _validation_errors(body if not isinstance(body, dict) else body.get("detail", message))
    if errors:
        first = next((e for e in errors if e[0] not in _UNION_NOISE), errors[0])
        message, field = first[2], first[1] or field
        more = len(errors) - 1
        note = f"{more} more problem{'s' if more != 1 else ''}" if more else ""
    else:
        note = ""
    message = _first_line(message) or fallback
    inside = "; ".join(part for part in (f"field {field}" if field else "", note) if part)
    text = f"{message} ({inside})" if inside else message
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _message_and_field(body: Any) -> tuple[str, str]:
    if isinstance(body, str):
        return _TAGS.sub(" ", body), ""
    if not isinstance(body, dict):
        return "", ""
    message = body.get("message") or body.get("msg") or body.get("detail") or body.get("error") or ""
    param = body.get("param")
    field = _field_name(re.split(r"\.(?=\[)|\.", param)) if isinstance(param, str) and param else ""
    return (message if isinstance(message, str) else ""), field


def _validation_errors(source: Any) -> list[tuple[str, str, str]]:
    """(type, field, message) for each validation error listed in ``source``, in order."""
    if isinstance(source, list):
        return [(str(e.get("type", "")), _field_name(e.get("loc") or []), str(e.get("msg", "")))
                for e in source if isinstance(e, dict) and "msg" in e]
    if not isinstance(source, str):
        return []
    found = [(m["type"], _field_name(re.split(r"\s*,\s*", m["loc"])), m["msg"]) for m in _REPR_ERROR.finditer(source)]
    if not found:
        found = [(m["type"], _field_name(m["loc"].split(".")), m["msg"]) for m in _TEXT_ERROR.finditer(source)]
    return found


def _field_name(loc: Any) -> str:
    """``('body', 'messages', 2, 'typed-dict', 'content')`` -> ``messages[2].content``."""
    out = ""
    for raw in loc if isinstance(loc, (list, tuple)) else []:
        part = str(raw).strip().strip("'\"[]")
        if part.isdigit():
            out += f"[{part}]"
        elif re.fullmatch(r"[a-z_][a-z0-9_]*", part) and not (part == "body" and not out):
            out += f".{part}" if out else part
        # else: a union variant's name ('typed-dict', 'ChatCompletionRequestAssistantMessage'): not a field
    return out


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line
    return ""
