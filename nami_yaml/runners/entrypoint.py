"""``entrypoint: module:function`` tools: a Python callable given the validated arguments as keywords.

Nothing is imported while loading; the module is imported on the first call. The tool file's own
folder is appended to ``sys.path`` so ``tools/mytools.py`` beside ``tools/mytools.yaml`` works. Appended,
not prepended: a ``json.py`` in a tool folder must not replace the standard library's for the whole process.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.display import summarize_arguments
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.import_guard import CodeCheck, guard_folder
from nami_yaml.runners.output import truncate_text
from nami_yaml.runtime import RuntimeContext

CONTEXT_PARAMETER = "ctx"
_import_lock = threading.Lock()


@dataclass(frozen=True)
class EntrypointRunner:
    target: str  # "package.module:function"
    base_dir: Path | None = None
    max_output: int | None = None

    kind = "entrypoint"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> EntrypointInvocation:
        return EntrypointInvocation(tool, self, args, ctx)

    def resolve(self, code_check: CodeCheck | None = None) -> Any:
        """The entry point's function, importing its module on first use. Modules from the tool's folder
        are imported from source only and vetted by ``code_check`` (see import_guard)."""
        module_name, _, function_name = self.target.partition(":")
        with _import_lock:
            if self.base_dir is not None:
                guard_folder(self.base_dir, code_check)
                if str(self.base_dir) not in sys.path:
                    sys.path.append(str(self.base_dir))
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:
                where = f" (looked in {self.base_dir} and sys.path)" if self.base_dir else ""
                raise ToolError(f"cannot import {module_name}{where}: {type(exc).__name__}: {exc}") from None
        function = getattr(module, function_name, None)
        if not callable(function):
            raise ToolError(f"{module_name} has no callable named {function_name}")
        return function


@dataclass
class EntrypointInvocation:
    tool: str
    runner: EntrypointRunner
    args: dict[str, Any]
    ctx: RuntimeContext
    kind = "entrypoint"

    def describe(self) -> str:
        return f"{self.tool} {summarize_arguments(self.args)}".rstrip()

    def plan(self) -> dict[str, Any]:
        return {"entrypoint": self.runner.target, "arguments": self.args}

    def run(self) -> ToolResult:
        try:
            function = self.runner.resolve(self.ctx.code_check)
            kwargs = dict(self.args)
            if _accepts_context(function):
                kwargs[CONTEXT_PARAMETER] = self.ctx
            value = function(**kwargs)
        except ToolError as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:  # a tool's bug is a result for the model, never a crash of the loop
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        if isinstance(value, ToolResult):
            result = value
        elif isinstance(value, str):
            result = ToolResult(value)
        elif value is None:
            result = ToolResult("(no output)")
        else:
            result = ToolResult(json.dumps(value, ensure_ascii=False, indent=1, default=str))
        limit = self.runner.max_output or self.ctx.settings.max_output
        # A tool that capped its own output (bash, fetch_url) says so; capping again would lose its markers.
        if len(result.content) > limit and not result.details.get("truncated"):
            result.content, spill = truncate_text(result.content, limit, self.ctx.spill_dir,
                                                          self.ctx.settings.max_saved_output)
            result.details["spill_path"] = str(spill) if spill else None
        return result


def _accepts_context(function: Any) -> bool:
    try:
        return CONTEXT_PARAMETER in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
