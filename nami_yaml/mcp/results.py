"""What an MCP tool result becomes for the model: text. Text blocks as they are; images, audio and binary
resources as a one-line note (the model behind nami reads text); structured content as JSON when the server
sent no text."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def result_text(result: types.CallToolResult) -> str:
    parts = [block_text(block) for block in result.content]
    if result.structured_content is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1, default=str))
    return "\n".join(part for part in parts if part) or "(no output)"


def block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4:,} bytes: not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}{' (' + block.name + ')' if block.name else ''}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return f"[resource {resource.uri}, {resource.mime_type or 'binary'}: not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content: not shown]"
