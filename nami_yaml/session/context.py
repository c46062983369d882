"""What every request carries before the conversation starts: the system prompt and each tool definition,
in characters as sent and in estimated tokens (``nami context``, `python -m bench.tokens`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from nami_yaml.session.usage import estimate_tokens


@dataclass(frozen=True)
class Part:
    label: str
    chars: int

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.chars)


def definition_chars(definition: dict[str, Any]) -> int:
    """A tool definition's characters as the client sends it: compact JSON, non-ASCII as is."""
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")))


def request_parts(system_prompt: str, definitions: list[dict[str, Any]], agents_md: str = "") -> list[Part]:
    """The fixed part of every request, largest first. ``agents_md``: the AGENTS.md section of the system
    prompt, counted as a part of its own."""
    parts = [Part("system prompt", len(system_prompt) - len(agents_md))]
    if agents_md:
        parts.append(Part("AGENTS.md (in the system prompt)", len(agents_md)))
    parts.extend(Part(f"tool {d['function']['name']}", definition_chars(d)) for d in definitions)
    return sorted(parts, key=lambda part: (-part.chars, part.label))


def total_chars(parts: list[Part]) -> int:
    return sum(part.chars for part in parts)
