"""``command:`` tools: an argv template rendered per call and run without a shell."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.errors import ToolError
from nami_yaml.runners.base import ProcessInvocation, build_invocation, template_values
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.template import ArgvRenderer, TemplateError, render_text
from nami_yaml.runtime import RuntimeContext


@dataclass(frozen=True)
class CommandRunner:
    argv: list[Any]
    options: ProcessOptions
    allow_dash: frozenset[str] = frozenset()
    maps: Mapping[str, Mapping[str, Any]] | None = None  # map: (see runners.template.ArgvRenderer)

    kind = "command"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> ProcessInvocation:
        values = template_values(args, ctx)
        try:
            argv = ArgvRenderer(self.allow_dash, self.maps).render(self.argv, values)
            stdin = None if self.options.stdin is None else render_text(self.options.stdin, values)
        except TemplateError as exc:
            raise ToolError(str(exc)) from None
        if not argv:
            raise ToolError("the command rendered to an empty argv")
        return build_invocation(tool, argv, self.options, ctx, stdin=stdin, values=values)
