"""The Chat Completions wire format as the fake server writes it: what strict servers refuse, whole
completions, streamed chunks, and the broken streams and bodies real servers sometimes send."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from typing import Any

from nami_yaml.testing.responses import _AUTO, ScriptedResponse, usage


def text_pieces(content: str) -> list[str]:
    # Word-sized deltas, like real servers: several of them for any multi-word text.
    return re.findall(r"\s*\S+\s*|\s+", content) or [content]


def _split(text_: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text_) // parts))
    return [text_[i:i + size] for i in range(0, len(text_), size)]


def protocol_problem(body: dict[str, Any]) -> str | None:
    """What a strict real server (DeepSeek, OpenAI) would reject with a 400, or None."""
    if not isinstance(body.get("model"), str):
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    pending: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}]: invalid role {role!r}"
        if role != "tool" and pending:
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool "
                    f"messages responding to each 'tool_call_id' (missing: {', '.join(sorted(pending))})")
        if "reasoning_content" in msg:
            return f"messages[{i}]: reasoning_content must not be sent back in input messages"
        if role == "assistant":
            pending = {c.get("id") for c in msg.get("tool_calls") or []}
        elif role == "tool":
            if msg.get("tool_call_id") not in pending:
                return (f"messages[{i}]: messages with role 'tool' must be a response to a preceding "
                        f"message with 'tool_calls' (unknown tool_call_id {msg.get('tool_call_id')!r})")
            pending.discard(msg["tool_call_id"])
    if pending:
        return f"tool calls without a tool message answering them: {', '.join(sorted(pending))}"
    for i, tool in enumerate(body.get("tools") or []):
        if not (isinstance(tool, dict) and tool.get("type") == "function"
                and isinstance(tool.get("function", {}).get("name"), str)):
            return f"tools[{i}]: expected {{'type': 'function', 'function': {{'name': ...}}}}"
    if "tools" in body and not body["tools"]:
        return "tools: empty array is invalid, omit the parameter instead"
    return None


def null_content_problem(body: dict[str, Any]) -> str | None:
    """The 500 message of a llama.cpp Python server whose validator refuses ``content: null``: every
    variant of the message union fails, so pydantic lists seven errors, most about the wrong role."""
    for i, msg in enumerate(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") == "assistant" and msg.get("content") is None:
            where = ("body", "messages", i, "typed-dict")
            errors: list[dict[str, Any]] = [
                {"type": "literal_error", "loc": (*where, "role"), "msg": f"Input should be '{role}'",
                 "input": "assistant", "ctx": {"expected": f"'{role}'"}}
                for role in ("system", "user")
            ]
            errors.append({"type": "string_type", "loc": (*where, "content"), "msg": "Input should be a valid string",
                           "input": None})
            errors.extend({"type": "literal_error", "loc": (*where, "role"), "msg": f"Input should be '{role}'",
                           "input": "assistant", "ctx": {"expected": f"'{role}'"}}
                          for role in ("tool", "function"))
            errors.extend({"type": "missing", "loc": (*where, key), "msg": "Field required", "input": msg}
                          for key in ("tool_call_id", "name"))
            return repr(errors)
    return None


def _usage_for(resp: ScriptedResponse, raw: bytes) -> dict[str, Any] | None:
    if resp.usage is not _AUTO:
        return resp.usage
    produced = len(resp.content or "") + sum(len(c.arguments) + len(c.name) for c in resp.calls)
    return usage(prompt=max(1, len(raw) // 4), completion=max(1, produced // 4))


def _call_ids(resp: ScriptedResponse, completion_id: str) -> list[str]:
    number = completion_id.rsplit("fake", 1)[-1]
    return [c.id or f"call_{number}_{i}" for i, c in enumerate(resp.calls)]


def _finish_reason(resp: ScriptedResponse) -> str:
    return resp.finish_reason or ("tool_calls" if resp.calls else "stop")


def completion_body(resp: ScriptedResponse, *, model: str, completion_id: str, raw: bytes) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": resp.content}
    if resp.reasoning is not None:
        message["reasoning_content"] = resp.reasoning
    if resp.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for cid, c in zip(_call_ids(resp, completion_id), resp.calls, strict=True)
        ]
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(resp)}],
    }
    u = _usage_for(resp, raw)
    if u is not None:
        body["usage"] = u
    return body


def completion_bytes(resp: ScriptedResponse, *, model: str, completion_id: str, raw: bytes) -> bytes:
    """The body of a plain (not streamed) response, broken as ``resp.malformed`` asks."""
    body = completion_body(resp, model=model, completion_id=completion_id, raw=raw)
    message = body["choices"][0]["message"]
    if resp.malformed == "types":
        message["content"], message["tool_calls"] = 42, {"index": 0}
    if resp.malformed == "utf8":
        message["content"] = "MALFORMED"
        return json.dumps(body).encode().replace(b"MALFORMED", b"caf\xe9")  # Latin-1, not UTF-8
    data = json.dumps(body).encode()
    return data[: len(data) // 2] if resp.malformed == "json" else data


def stream_chunks(resp: ScriptedResponse, *, model: str, completion_id: str, raw: bytes,
                  include_usage: bool) -> Iterator[dict[str, Any]]:
    """The chunk objects of a streamed response, split the way real servers split them."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in text_pieces(resp.reasoning) if resp.reasoning else []:
        yield chunk({"reasoning_content": piece})
    for piece in text_pieces(resp.content) if resp.content else []:
        yield chunk({"content": piece})
    ids = _call_ids(resp, completion_id)
    for i, (cid, c) in enumerate(zip(ids, resp.calls, strict=True)):
        yield chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                     "function": {"name": c.name, "arguments": ""}}]})
    # Argument fragments interleave across calls by index, the hardest order for a client to assemble.
    fragments = [_split(c.arguments) for c in resp.calls]
    for round_ in itertools.zip_longest(*fragments):
        for i, frag in enumerate(round_):
            if frag is not None:
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
    yield chunk({}, _finish_reason(resp))
    u = _usage_for(resp, raw)
    if include_usage and u is not None:
        yield {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [], "usage": u}


def _bad_event(kind: str, completion_id: str) -> bytes:
    head = f'{{"id": "{completion_id}", "object": "chat.completion.chunk", "choices": '.encode()
    if kind == "utf8":
        return head + b'[{"index": 0, "delta": {"content": "caf\xe9"}, "finish_reason": null}]}'
    if kind == "json":
        return head + b'[{"index": 0, "delta": {"content": "unterminated'
    return head + b'[{"index": 0, "delta": {"content": 42, "tool_calls": {"index": 0}}, "finish_reason": 7}]}'


def stream_payloads(resp: ScriptedResponse, chunks: Iterator[dict[str, Any]], completion_id: str) -> Iterator[bytes]:
    """The ``data:`` payloads of a streamed response, ``[DONE]`` included, cut or broken as scripted."""
    if resp.raw_events is not None:
        yield from (e if isinstance(e, bytes) else e.encode() for e in resp.raw_events)
        return
    payloads: Iterator[bytes] = (json.dumps(c).encode() for c in chunks)
    if resp.malformed:
        first = list(itertools.islice(payloads, 1))
        payloads = itertools.chain(first, [_bad_event(resp.malformed, completion_id)], payloads)
    if resp.end_after is not None:
        payloads = itertools.islice(payloads, resp.end_after)
        yield from payloads
        if resp.send_done:
            yield b"[DONE]"
        return
    yield from payloads
    yield b"[DONE]"
