"""``command:`` tools: an argv template rendered per call and run without a shell; with ``plan:``, a plan
step rendered alike (runners/plan_step.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from nami_yaml.errors import ToolError
from nami_yaml.runners.base import ProcessInvocation, build_invocation, template_values
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.plan_step import (
    PLAN_FILE,
    PLAN_FILE_NAME,
    PlannedInvocation,
    PlanSpec,
    PlanStep,
    plan_folder,
    reading,
)
from nami_yaml.runners.template import ArgvRenderer, TemplateError, refs, render_text, walk_argv
from nami_yaml.runtime import RuntimeContext


def uses_plan_file(argv: Any) -> bool:
    """Whether an argv template names {plan_file}."""
    return isinstance(argv, (list, tuple)) and any(
        PLAN_FILE in refs(template) for _, template, _ in walk_argv(list(argv)))


@dataclass(frozen=True)
class CommandRunner:
    argv: list[Any]
    options: ProcessOptions
    allow_dash: frozenset[str] = frozenset()
    maps: Mapping[str, Mapping[str, Any]] | None = None  # map: (see runners.template.ArgvRenderer)
    plan: PlanSpec | None = None

    kind = "command"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> ProcessInvocation:
        values = template_values(args, ctx)
        folder = plan_folder() if self.plan is not None and uses_plan_file(self.plan.command) else None
        if folder is not None:
            values = {**values, PLAN_FILE: str(folder / PLAN_FILE_NAME)}
        renderer = ArgvRenderer(self.allow_dash, self.maps)
        try:
            argv = renderer.render(self.argv, values)
            stdin = None if self.options.stdin is None else render_text(self.options.stdin, values)
            plan_argv = renderer.render(list(self.plan.command), values) if self.plan is not None else None
            show_argv = renderer.render(list(self.plan.show), values) if self.plan and self.plan.show else None
        except TemplateError as exc:
            raise ToolError(str(exc)) from None
        if not argv or plan_argv == []:
            raise ToolError("the command rendered to an empty argv")
        invocation = build_invocation(tool, argv, self.options, ctx, stdin=stdin, values=values)
        if self.plan is None or plan_argv is None:
            return invocation
        step = self._step(tool, plan_argv, show_argv, folder, ctx, argv)
        planned = PlannedInvocation(**{f.name: getattr(invocation, f.name) for f in fields(invocation)}, step=step)
        if folder is not None:
            planned.sandbox = reading(planned.sandbox, folder)
        return planned

    def _step(self, tool: str, plan_argv: list[str], show_argv: list[str] | None, folder: Any,
              ctx: RuntimeContext, argv: list[str]) -> PlanStep:
        """The call's plan step: its processes run as the tool's would (its env, target, sandbox), with no
        stdin, no output shaping, and the plan's own timeout."""
        assert self.plan is not None
        options = replace(self.options, stdin=None, output=None, timeout=self.plan.timeout or self.options.timeout)
        plan = build_invocation(tool, plan_argv, options, ctx, stdin=None)
        show = build_invocation(tool, show_argv, options, ctx, stdin=None) if show_argv else None
        if folder is not None:
            plan.allow_writes([folder])  # the plan step alone writes in the call's plan folder
            if show is not None:
                show.sandbox = reading(show.sandbox, folder)
        return PlanStep(self.plan, plan, show, folder, needed=uses_plan_file(self.argv) and folder is not None,
                        tool_argv=tuple(argv))
