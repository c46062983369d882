"""Reading what a server sent: streamed chunks assembled into one turn, every field checked on the way.

Servers nami was not written for send streams that stop early, events that are not JSON and fields of
the wrong type. Each of those is a :class:`BrokenResponse` saying where it went wrong, never a TypeError
from deep inside the client. No openai import: the client hands over plain dicts (what ``json.loads`` made of
each event); the SDK's typed objects are read too, by attribute.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from nami_yaml.model.types import AssistantTurn, ToolCall, Usage


class BrokenResponse(Exception):
    """A response that cannot be used: cut short, not JSON, or with fields of the wrong type. Retried."""


class EmptyStream(BrokenResponse):
    """A stream that ended or broke before its first event. Retried without streaming: llama-cpp-python's server
    begins a stream with 200 before it knows the prompt is longer than its context, then drops it unsaid;
    a plain request gets the reason (400, the sizes) instead of the same silence."""


class TooLarge(Exception):
    """A response longer than the client's limit (limits.max_response_bytes). Not retried: an endpoint
    that sent one endless answer would send another."""

    def __init__(self, limit: int):
        super().__init__(limit)
        self.limit = limit


class Silent(Exception):
    """A stream that kept its connection busy (keep-alive comments, events that carry nothing), so no read
    timed out, yet said nothing for longer than the client's timeout. Not retried: it would again."""

    def __init__(self, seconds: float):
        super().__init__(seconds)
        self.seconds = seconds


def utf8_size(text: str) -> int:
    # Lone surrogates (a JSON "\ud800") have no UTF-8 form; they are counted as written, never refused here.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# What a tool call of a streamed response counts against the limit besides its id, name and arguments: about
# the envelope of it in the assistant message sent back with every later request.
CALL_OVERHEAD = 64
_KINDS = {str: "text", int: "a whole number", list: "a list", dict: "an object"}


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "an object"


def _is_object(value: Any) -> bool:
    # A JSON object is a dict (or, from the SDK's typed parsing, a model object); anything else is as sent.
    return value is not None and not isinstance(value, (str, bytes, int, float, bool, list, tuple))


class Reader:
    """Typed access to one response object, with the place of each field for the error message."""

    def __init__(self, where: str = ""):
        self.where = f"{where}: " if where else ""

    def get(self, obj: Any, path: str, name: str, kind: type | None) -> Any:
        """``obj.name`` when it is None or of ``kind`` (None: an object); else a BrokenResponse."""
        value = _field(obj, name)
        if value is None:
            return None
        ok = _is_object(value) if kind is None else isinstance(value, kind) and not isinstance(value, bool)
        if not ok:
            expected = "an object" if kind is None else _KINDS.get(kind, kind.__name__)
            raise BrokenResponse(f"{self.where}{path}{name} is {_describe(value)}, expected {expected}")
        return value

    def items(self, obj: Any, path: str, name: str) -> list[Any]:
        return list(self.get(obj, path, name, list) or [])

    def usage(self, obj: Any) -> Usage | None:
        raw = self.get(obj, "", "usage", None)
        if raw is None:
            return None
        prompt = self.get(raw, "usage.", "prompt_tokens", int) or 0
        completion = self.get(raw, "usage.", "completion_tokens", int) or 0
        details = self.get(raw, "usage.", "prompt_tokens_details", None)
        cached = self.get(details, "usage.prompt_tokens_details.", "cached_tokens", int) if details else None
        if not cached:
            # DeepSeek reports cache hits in a field of its own.
            extra = getattr(raw, "model_extra", None) or (raw if isinstance(raw, dict) else {})
            hit = extra.get("prompt_cache_hit_tokens")
            cached = hit if isinstance(hit, int) and not isinstance(hit, bool) else 0
        completion_details = self.get(raw, "usage.", "completion_tokens_details", None)
        reasoning = (self.get(completion_details, "usage.completion_tokens_details.", "reasoning_tokens", int)
                     if completion_details else None)
        return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                     reasoning_tokens=reasoning or 0, reported=True)


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


class StreamAssembly:
    """Streamed chunks in, one :class:`AssistantTurn` out. ``feed`` returns the text to show.

    ``limit`` bounds the bytes of text, reasoning and tool calls it keeps (what grows with a response):
    past it, :class:`TooLarge`, so a stream without end cannot grow memory without end."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.size = 0  # UTF-8 bytes of text, reasoning, tool calls' ids, names and arguments so far (and CALL_OVERHEAD a call)
        self.events = 0
        self.text: list[str] = []
        self.slots: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: Any) -> list[str]:
        self.events += 1
        read = Reader(f"event {self.events}")
        if not _is_object(chunk):
            raise BrokenResponse(f"event {self.events} is {_describe(chunk)}, expected an object")
        usage = read.usage(chunk)
        if usage is not None:
            self.usage = usage
        shown = []
        for i, choice in enumerate(read.items(chunk, "", "choices")):
            at = f"choices[{i}]."
            if not _is_object(choice):
                raise BrokenResponse(f"event {self.events}: choices[{i}] is {_describe(choice)}, expected an object")
            delta = read.get(choice, at, "delta", None)
            content = read.get(delta, at + "delta.", "content", str) if delta is not None else None
            if content:
                self._count(content)
                self.text.append(content)
                shown.append(content)
            if delta is not None:  # not kept, but it streams as text does; only read, so never refused
                for name in ("reasoning_content", "reasoning"):
                    reasoning = _field(delta, name)
                    self._count(reasoning if isinstance(reasoning, str) else None)
            for j, call in enumerate(read.items(delta, at + "delta.", "tool_calls") if delta is not None else []):
                self._merge_call(read, f"{at}delta.tool_calls[{j}].", call)
            finish = read.get(choice, at, "finish_reason", str)
            if finish:
                self.finish_reason = finish
        return shown

    def said(self) -> tuple[int, bool]:
        """How much the stream has said: grows with each piece of text, reasoning or tool call, and at the finish."""
        return self.size, self.finish_reason is not None

    def _merge_call(self, read: Reader, at: str, call: Any) -> None:
        if not _is_object(call):
            raise BrokenResponse(f"{read.where}{at.rstrip('.')} is {_describe(call)}, expected an object")
        index = read.get(call, at, "index", int)
        call_id = read.get(call, at, "id", str)
        if index is None:
            # Some servers omit the index: a new id starts a new call, anything else continues the last one.
            last = max(self.slots, default=0)
            index = last + 1 if call_id and self.slots.get(last, {}).get("id") not in (None, call_id) else last
        slot = self.slots.get(index)
        if slot is None:  # each call costs its message's envelope too: endless empty calls are not free
            self._add(CALL_OVERHEAD)
            slot = self.slots[index] = {"id": None, "name": "", "arguments": []}
        if call_id and not slot["id"]:
            self._count(call_id)  # kept, and sent back with every later request
            slot["id"] = call_id
        function = read.get(call, at, "function", None)
        if function is not None:
            name = read.get(function, at + "function.", "name", str)
            arguments = read.get(function, at + "function.", "arguments", str)
            # Some servers repeat the name on every fragment; the first one is the name.
            if name and not slot["name"]:
                slot["name"] = name
            self._count(name)
            if arguments:
                self._count(arguments)
                slot["arguments"].append(arguments)

    def _count(self, piece: str | None) -> None:
        if piece:
            self._add(utf8_size(piece))

    def _add(self, size: int) -> None:
        self.size += size
        if self.limit is not None and self.size > self.limit:
            raise TooLarge(self.limit)

    def turn(self, where: str) -> AssistantTurn:
        """The assembled turn; a stream that ended before a finish_reason is a BrokenResponse."""
        if self.finish_reason is None:
            raise self.cut_short(where)
        calls = [ToolCall(id=s["id"] or new_call_id(), name=s["name"], arguments="".join(s["arguments"]))
                 for _, s in sorted(self.slots.items())]
        return AssistantTurn(content="".join(self.text) or None, tool_calls=calls,
                             finish_reason=self.finish_reason, usage=self.usage)

    def cut_short(self, where: str, cause: str = "") -> BrokenResponse:
        return (EmptyStream if self.events == 0 else BrokenResponse)(self.ended_early(where, cause))

    def ended_early(self, where: str, cause: str = "") -> str:
        count = f"{self.events} event{'s' if self.events != 1 else ''} received"
        return f"the stream from {where} ended before the model finished ({count}{cause})"


def read_completion(reply: Any) -> AssistantTurn:
    """A whole (not streamed) completion, checked like a stream's chunks."""
    read = Reader()
    if not _is_object(reply):
        raise BrokenResponse(f"the body is {_describe(reply)}, expected an object")
    choices = read.items(reply, "", "choices")
    if not choices:
        raise BrokenResponse("the body has no choices")
    choice = choices[0]
    if not _is_object(choice):
        raise BrokenResponse(f"choices[0] is {_describe(choice)}, expected an object")
    message = read.get(choice, "choices[0].", "message", None)
    if message is None:
        raise BrokenResponse("choices[0] has no message")
    at = "choices[0].message."
    content = read.get(message, at, "content", str)
    calls = []
    for j, call in enumerate(read.items(message, at, "tool_calls")):
        where = f"{at}tool_calls[{j}]."
        if not _is_object(call):
            raise BrokenResponse(f"{where.rstrip('.')} is {_describe(call)}, expected an object")
        function = read.get(call, where, "function", None)
        if function is None:
            continue
        calls.append(ToolCall(id=read.get(call, where, "id", str) or new_call_id(),
                              name=read.get(function, where + "function.", "name", str) or "",
                              arguments=read.get(function, where + "function.", "arguments", str) or ""))
    return AssistantTurn(content=content or None, tool_calls=calls,
                         finish_reason=read.get(choice, "choices[0].", "finish_reason", str),
                         usage=read.usage(reply))


class TextEcho:
    """Passes streamed text on. After a retry it holds back what the failed attempt already showed, so a
    repeated answer is not shown twice; an answer that differs starts on a new line."""

    def __init__(self, on_text: Callable[[str], None] | None):
        self.on_text = on_text
        self.shown = ""  # what the user has seen of the current attempt
        self.previous = ""  # what the user saw of the failed attempt, while the new one repeats it
        self.replaying = False

    def retry(self) -> None:
        self.previous, self.shown, self.replaying = self.shown, "", bool(self.shown)

    def __call__(self, piece: str) -> None:
        if self.on_text is None:
            return
        if self.replaying:
            self.shown += piece
            if self.previous.startswith(self.shown):
                return
            self.replaying = False
            same_start = self.shown.startswith(self.previous)
            self.on_text(self.shown[len(self.previous):] if same_start else "\n" + self.shown)
            return
        self.shown += piece
        self.on_text(piece)
