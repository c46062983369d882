"""``pipeline:`` tools: argv templates connected by pipes, without a shell.

Every stage is rendered like a ``command:`` (the same placeholders, groups and dash rule). One process of
nami's own (runners/pipeline_child.py, with this interpreter) starts the stages inside the call's one
sandbox and process group, so a timeout or Ctrl-C stops them all, and fails like ``set -o pipefail``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.display import pipeline_line
from nami_yaml.errors import ToolError
from nami_yaml.runners.base import ProcessInvocation, build_invocation, template_values
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.template import ArgvRenderer, TemplateError, render_text
from nami_yaml.runtime import RuntimeContext

_BOOT = "import sys; sys.path.append(sys.argv[1]); from nami_yaml.runners.pipeline_child import main; main()"
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class PipelineRunner:
    stages: list[list[Any]]
    options: ProcessOptions
    allow_dash: frozenset[str] = frozenset()
    maps: Mapping[str, Mapping[str, Any]] | None = None  # map: (see runners.template.ArgvRenderer)

    kind = "pipeline"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> ProcessInvocation:
        values = template_values(args, ctx)
        renderer = ArgvRenderer(self.allow_dash, self.maps)
        try:
            stages = [renderer.render(stage, values) for stage in self.stages]
            stdin = None if self.options.stdin is None else render_text(self.options.stdin, values)
        except TemplateError as exc:
            raise ToolError(str(exc)) from None
        for index, argv in enumerate(stages):
            if not argv:
                raise ToolError(f"pipeline stage {index + 1} rendered to an empty argv")
        if not sys.executable:
            raise ToolError("no Python interpreter is known to run the pipeline in")
        argv = [sys.executable, "-I", "-B", "-c", _BOOT, _PACKAGE_PARENT, json.dumps(stages)]
        return build_invocation(tool, argv, self.options, ctx, stdin=stdin,
                                label=pipeline_line(stages),
                                kind="pipeline", visible=[Path(_PACKAGE_PARENT)], stages=stages,
                                values=values)
