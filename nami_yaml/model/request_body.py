"""The request body as the bytes the SDK would send, with each message encoded once.

Every request sends the whole conversation again, and the conversation only grows between requests (its
start is the very same message objects: agent/history.py). Serialising all of it on every step, as the
SDK does with the body it is given, cost ~0.25 ms a request at 100 steps and grew with every step; here a
message is encoded when it first goes out and its bytes are reused after that. The result is byte for byte
what the SDK makes of the same body (compact JSON, non-ASCII as is, no NaN), so prompt caches see no change.
"""

from __future__ import annotations

import json
import operator
from typing import Any

# The SDK's encoding of a body (openai's openapi_dumps, and httpx's before it).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


def encode_json(value: Any) -> bytes:
    """``value`` as the SDK sends it. A value holding a lone surrogate (JSON from the model may say
    "\\ud800"), which has no UTF-8 form and which the SDK could not send, is written with ``\\u`` escapes:
    the server reads the same text. Raises ValueError or TypeError for what JSON cannot hold (NaN, a date)."""
    text = _encode(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _encode_ascii(value).encode("ascii")


class GrowingList:
    """The encoding of a list that grows at its end, each item encoded once (kept while the list starts
    with the very same objects, compared by identity; the items themselves are never changed in place)."""

    def __init__(self) -> None:
        self._items: list[Any] = []  # held, so an identity can never be that of a new object
        self._parts: list[bytes] = []

    def encode(self, items: list[Any]) -> bytes:
        if len(items) < len(self._items) or not all(map(operator.is_, self._items, items)):
            self._items, self._parts = [], []
        known = self._items
        added = items[len(known):]
        encoded = [encode_json(item) for item in added]  # before either list grows: a failure leaves them as they were
        known.extend(added)
        self._parts.extend(encoded)
        return b"[" + b",".join(self._parts) + b"]"


class BodyEncoder:
    """One per client: the body's growing lists (``messages``, ``tools``) are encoded item by item and
    remembered; its other fields, a few short values, each time."""

    def __init__(self, growing: tuple[str, ...] = ("messages", "tools")):
        self._lists = {key: GrowingList() for key in growing}

    def encode(self, body: dict[str, Any]) -> bytes:
        fields = []
        for key, value in body.items():
            growing = self._lists.get(key)
            encoded = growing.encode(value) if growing is not None and isinstance(value, list) else encode_json(value)
            fields.append(encode_json(key) + b":" + encoded)
        return b"{" + b",".join(fields) + b"}"
