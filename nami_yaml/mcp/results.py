"""What an MCP tool result becomes for the model: text. Text blocks as they are; images, audio and binary
resources as a one-line note (the model behind nami reads text); structured content as JSON when the server
sent no text. Binary data sent as text (base64 in ``structuredContent`` or in a JSON text, a ``data:`` URI)
becomes a note too: tens of kilobytes of base64 would fill the model's context and tell it nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

import mcp_types as types

# Shorter strings are left alone: a hash, a token or an id is text the model may need.
MIN_BINARY = 1_000
_MIN_SYMBOLS = 32  # distinct characters in the first 4,000: random bytes use about 64
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_DATA_URI = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,", re.A)
_MAGIC = (  # the first bytes of the formats servers send, for the note
    (b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"), (b"PK\x03\x04", "application/zip"), (b"\x1f\x8b", "application/gzip"),
    (b"ID3", "audio/mpeg"), (b"OggS", "audio/ogg"),
)


def result_text(result: types.CallToolResult) -> str:
    """The text of a result; an error result reads as nami's own failed results do (``Error: …``)."""
    parts = [block_text(block) for block in result.content]
    if result.structured_content is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(json.dumps(without_binary(result.structured_content)[0], ensure_ascii=False, indent=1,
                                default=str))
    text = "\n".join(part for part in parts if part) or "(no output)"
    return text if not result.is_error or text.startswith("Error:") else f"Error: {text}"


def block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return text_without_binary(block.text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4:,} bytes: not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}{' (' + block.name + ')' if block.name else ''}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{text_without_binary(resource.text)}"
        return f"[resource {resource.uri}, {resource.mime_type or 'binary'}: not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content: not shown]"


def text_without_binary(text: str) -> str:
    """A text block as the model gets it: a note for binary data, JSON with its binary strings replaced."""
    note = binary_note(text)
    if note is not None:
        return note
    if len(text) < MIN_BINARY or text.lstrip()[:1] not in ("{", "["):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    cleaned, changed = without_binary(value)
    return json.dumps(cleaned, ensure_ascii=False, indent=1) if changed else text


def without_binary(value: Any) -> tuple[Any, bool]:
    """``value`` with every string that holds binary data replaced by a note; whether any was."""
    if isinstance(value, str):
        note = binary_note(value)
        return (note, True) if note is not None else (value, False)
    if isinstance(value, dict):
        items = {key: without_binary(item) for key, item in value.items()}
        return {key: item for key, (item, _) in items.items()}, any(changed for _, changed in items.values())
    if isinstance(value, list):
        pairs = [without_binary(item) for item in value]
        return [item for item, _ in pairs], any(changed for _, changed in pairs)
    return value, False


def binary_note(text: str) -> str | None:
    """``[base64 data, image/png, 37,500 bytes: not shown]`` when ``text`` is binary data, else None."""
    if len(text) < MIN_BINARY:
        return None
    uri = _DATA_URI.match(text)
    if uri is not None:
        data = _decoded(text[uri.end():])
        if data is None:
            return None
        return f"[data: URI, {uri.group(1) or _kind(data)}, {len(data):,} bytes: not shown]"
    data = _decoded(text)
    if data is None or not _is_binary(data):
        return None  # base64 of text (or text that only looks like it) stays as it was
    return f"[base64 data, {_kind(data)}, {len(data):,} bytes: not shown]"


def _decoded(text: str) -> bytes | None:
    lines = text.strip().replace("\r\n", "\n").split("\n")
    # Base64 is one word, or wrapped in lines of one width (76, 64): words between spaces or lines of
    # text are text, even when every character of them is a base64 one ("line 1\nline 2").
    if len(lines) > 1 and (len(lines[0]) < 60 or len(lines[0]) % 4 or len({len(line) for line in lines[:-1]}) > 1
                           or len(lines[-1]) > len(lines[0])):
        return None
    compact = "".join(lines)
    # Encoded bytes use most of the alphabet; a long run of one word (aaaa…, a hex digest) does not.
    if not _BASE64.fullmatch(compact) or len(set(compact[:4000])) < _MIN_SYMBOLS:
        return None
    try:
        if "-" in compact or "_" in compact:
            return base64.urlsafe_b64decode(compact + "=" * (-len(compact) % 4))
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_binary(data: bytes) -> bool:
    if any(data.startswith(magic) for magic, _ in _MAGIC):
        return True
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return any(ord(char) < 32 and char not in "\t\n\r" for char in decoded)


def _kind(data: bytes) -> str:
    return next((kind for magic, kind in _MAGIC if data.startswith(magic)), "binary")
