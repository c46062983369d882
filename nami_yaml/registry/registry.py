"""The ordered set of tools an agent may use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from nami_yaml.registry.groups import LOADER, catalogue, loader_definition
from nami_yaml.registry.tool import Tool

DOCS_READER = "tool_docs"  # the built-in that reads tools' docs on demand


class Registry:
    """Tools in declaration order. The definitions are the same bytes every time they are asked for,
    so the request prefix stays stable and providers' prompt caches hit. ``on_demand``: groups whose
    definitions are sent only once loaded (registry.groups)."""

    def __init__(self, tools: Iterable[Tool] = (), *, on_demand: frozenset[str] = frozenset()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool
        self.on_demand = on_demand

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

    def groups(self) -> dict[str, list[str]]:
        """The on-demand groups and their tools' names: what load_tools offers."""
        return catalogue(self._tools.values(), self.on_demand)

    def is_on_demand(self, tool: Tool) -> bool:
        return tool.group is not None and tool.group in self.on_demand

    def definitions(self, loaded: Iterable[str] = ()) -> list[dict[str, Any]]:
        """What the model is sent: every tool but those of on-demand groups, then the groups ``loaded``, in
        the order they were loaded (so loading one more appends, never rewrites)."""
        # A tool's description mentions its docs only if nami's own reader is there to read them.
        reader = self._tools.get(DOCS_READER)
        hint = reader is not None and reader.builtin
        listing = self.groups()
        sent = []
        for tool in self._tools.values():
            if self.is_on_demand(tool):
                continue
            definition = tool.definition(docs_hint=hint)
            if tool.name == LOADER and tool.builtin and listing:
                definition = loader_definition(definition, listing)
            sent.append(definition)
        for group in dict.fromkeys(loaded):
            sent.extend(self._tools[name].definition(docs_hint=hint) for name in listing.get(group, ()))
        return sent

    def all_definitions(self) -> list[dict[str, Any]]:
        """Every tool's definition, on-demand groups included (``nami context``'s other number)."""
        return self.definitions(self.groups())
