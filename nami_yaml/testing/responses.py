"""What a scripted model says: the response objects and the builders tests write scripts with."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_AUTO: Any = object()  # "compute usage from the request", distinct from None ("send no usage at all")

MALFORMED_KINDS = ("utf8", "json", "types")


@dataclass
class ScriptedCall:
    name: str
    arguments: str  # sent exactly as given, so tests can script malformed JSON
    id: str | None = None


@dataclass
class ScriptedResponse:
    """One reply the server gives, in order. Build with :func:`text`, :func:`tool_calls`, :func:`error`.

    The last four fields script a broken server: ``drop_after`` cuts the connection, ``end_after`` ends the
    stream cleanly but early (``0``: an empty stream), ``malformed`` sends one bad event or body, and
    ``raw_events`` replaces the generated stream by exact ``data:`` payloads.
    """

    content: str | None = None
    calls: list[ScriptedCall] = field(default_factory=list)
    finish_reason: str | None = None  # None: "tool_calls" when there are calls, else "stop"
    usage: dict[str, Any] | None = _AUTO
    reasoning: str | None = None  # DeepSeek-style reasoning_content
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between streamed chunks
    status: int = 200
    error_body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None  # streamed events sent before the connection is cut mid-response
    end_after: int | None = None  # streamed events sent before the stream ends without a finish_reason
    send_done: bool = True  # whether a stream cut short by end_after still ends with `data: [DONE]`
    malformed: str | None = None  # "utf8" | "json" | "types": one broken event (stream) or body (plain)
    # Exact `data:` payloads streamed instead of the script; any iterable, read as it is sent (endless too).
    raw_events: Iterable[str | bytes] | None = None


def call(name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None) -> ScriptedCall:
    """A tool call; a dict is JSON-encoded, a string is sent verbatim (malformed JSON allowed)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ScriptedCall(name=name, arguments=args, id=id)


def text(content: str, **options: Any) -> ScriptedResponse:
    return ScriptedResponse(content=content, **options)


def tool_calls(*calls: ScriptedCall, content: str | None = None, **options: Any) -> ScriptedResponse:
    return ScriptedResponse(content=content, calls=list(calls), **options)


def error(status: int, message: str, *, type: str | None = None, code: str | None = None,
          retry_after: float | None = None, **options: Any) -> ScriptedResponse:
    """An HTTP error with an OpenAI-style body. ``retry_after`` (seconds) sets ``retry-after-ms``,
    which the SDK honours, so retry tests need not wait for its default backoff."""
    headers = dict(options.pop("headers", {}))
    if retry_after is not None:
        headers["retry-after-ms"] = str(int(retry_after * 1000))
    body = {"error": {"message": message, "type": type or _error_type(status), "param": None, "code": code}}
    return ScriptedResponse(status=status, error_body=body, headers=headers, **options)


def usage(prompt: int = 10, completion: int = 5, cached: int = 0, *, reasoning: int = 0,
          style: str = "openai") -> dict[str, Any]:
    """A usage object; ``style="deepseek"`` reports cache hits the way DeepSeek does. ``reasoning``
    tokens are part of ``completion``, as providers count them."""
    data: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                            "total_tokens": prompt + completion}
    if reasoning:
        data["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if style == "deepseek":
        data["prompt_cache_hit_tokens"] = cached
        data["prompt_cache_miss_tokens"] = prompt - cached
    else:
        data["prompt_tokens_details"] = {"cached_tokens": cached}
    return data


def response_from_dict(data: dict[str, Any] | str) -> ScriptedResponse:
    """The JSON script format: ``"hi"``, ``{"content": ...}``, ``{"tool_calls": [{"name", "arguments"}]}``,
    ``{"error": {"status": 500, "message": "boom"}}``, plus the ScriptedResponse option names.

    It trusts its input: a script file is checked first by :func:`nami_yaml.testing.script_file.load_script`.
    """
    if isinstance(data, str):
        return text(data)
    data = dict(data)
    if "error" in data:
        err = data.pop("error")
        return error(int(err.get("status", 500)), str(err.get("message", "error")),
                     **{k: v for k, v in err.items() if k in ("type", "code", "retry_after")}, **data)
    calls = [call(c["name"], c.get("arguments"), id=c.get("id")) for c in data.pop("tool_calls", [])]
    return ScriptedResponse(calls=calls, **data)


def _error_type(status: int) -> str:
    if status == 429:
        return "rate_limit_error"
    if status in (401, 403):
        return "authentication_error"
    return "invalid_request_error" if status < 500 else "server_error"
