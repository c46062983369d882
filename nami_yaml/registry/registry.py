"""The ordered set of tools an agent may use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from nami_yaml.registry.tool import Tool

DOCS_READER = "tool_docs"  # the built-in that reads tools' docs on demand


class Registry:
    """Tools in declaration order. The definitions are the same bytes every time they are asked for,
    so the request prefix stays stable and providers' prompt caches hit."""

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def unknown(self, name: str) -> str:
        """The message for a name that is not here, for the model and for people alike."""
        return f"unknown tool '{name}'. Available tools: {', '.join(self._tools) or 'none'}"

    def definitions(self) -> list[dict[str, Any]]:
        # A tool's description mentions its docs only if nami's own reader is there to read them.
        reader = self._tools.get(DOCS_READER)
        hint = reader is not None and reader.builtin
        return [tool.definition(docs_hint=hint) for tool in self._tools.values()]
