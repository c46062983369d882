"""``entrypoint: module:function`` tools: a Python callable given the validated arguments as keywords.

Nothing is imported while loading. A tool file's entry point runs in a child process, in the sandbox its
``sandbox:`` keys describe (runners/entry_child.py), one process per call, so its module is imported
there, from source, at each call. The tool file's own folder is appended to ``sys.path`` so
``tools/mytools.py`` beside ``tools/mytools.yaml`` works. Appended, not prepended: a ``json.py`` in a tool
folder must not replace the standard library's. nami's own built-ins (read_file, bash, ...: no tool
folder) run inside nami, which holds their boundaries; the processes they start are sandboxed. With
``sandbox.mode: off``, every entry point runs inside nami, as before the sandbox.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nami_yaml.display import summarize_arguments
from nami_yaml.result import ToolResult
from nami_yaml.runners.entry_call import CONTEXT_PARAMETER, call, resolve
from nami_yaml.runners.entry_child import run_in_child
from nami_yaml.runners.import_guard import CodeCheck
from nami_yaml.runners.output import truncate_text
from nami_yaml.runners.sandbox.describe import describe as describe_sandbox
from nami_yaml.runners.sandbox.plan import BASH_BUILTIN, OFF, SandboxPlan, builtin_plan, plan_for
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxNeeds

__all__ = ["CONTEXT_PARAMETER", "EntrypointInvocation", "EntrypointRunner"]

# Built-ins whose function does bounded work (no waiting but on its process, no loop over what the model
# chose) and then runs one process through the process runner, which kills it once the call is cancelled.
WAITS_ON_ITS_PROCESS = frozenset({BASH_BUILTIN})


@dataclass(frozen=True)
class EntrypointRunner:
    target: str  # "package.module:function"
    base_dir: Path | None = None  # the tool file's folder; None: nami's own, run inside nami
    max_output: int | None = None
    timeout: float | None = None  # of the child (None: limits.tool_timeout)
    sandbox: SandboxNeeds = SandboxNeeds()
    passthrough: tuple[str, ...] = ()  # env_passthrough: secret-looking host variables the child may see

    kind = "entrypoint"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> EntrypointInvocation:
        # With the sandbox off, as before it: inside nami (no child, so no timeout either).
        inside = self.base_dir is None or ctx.sandbox.mode == OFF
        plan = None if inside else plan_for(ctx, self.sandbox, visible=child_paths(self.base_dir))
        return EntrypointInvocation(tool, self, args, ctx, plan)

    def resolve(self, code_check: CodeCheck | None = None) -> Any:
        """The function, imported here (in nami's process)."""
        return resolve(self.target, self.base_dir, code_check)


@dataclass
class EntrypointInvocation:
    tool: str
    runner: EntrypointRunner
    args: dict[str, Any]
    ctx: RuntimeContext
    sandbox: SandboxPlan | None = None  # the child's; None: nami's own, run inside nami
    kind = "entrypoint"

    def describe(self) -> str:
        return f"{self.tool} {summarize_arguments(self.args)}".rstrip()

    def plan(self) -> dict[str, Any]:
        plan: dict[str, Any] = {"entrypoint": self.runner.target, "arguments": self.args}
        shown = self.sandbox if self.sandbox is not None else builtin_plan(self.runner.target, self.ctx)
        if shown is not None:
            plan["sandbox"] = describe_sandbox(shown, shown.home)
        return plan

    @property
    def stops_when_cancelled(self) -> bool:
        """Whether run() returns soon once cancelled, so that it may run on the loop's own thread
        (agent/tool_phase.py): where it only waits on a process, which it kills once cancelled (a tool
        file's entry point in its child, the sandbox on; the bash built-in). Any other function called
        inside nami may ignore the cancel switch, or block in C code no Ctrl-C reaches: it runs on a worker
        thread, which the loop can abandon after Ctrl-C."""
        if self.runner.base_dir is None:
            return self.runner.target in WAITS_ON_ITS_PROCESS
        return self.sandbox is not None

    def sandbox_plan(self) -> SandboxPlan | None:
        """The sandbox the call's code runs in: the child's, or that of the process a built-in starts
        (bash's); None for a built-in that starts none."""
        return self.sandbox if self.sandbox is not None else builtin_plan(self.runner.target, self.ctx)

    def unsandboxed(self, reason: str) -> EntrypointInvocation:
        """The same call without the sandbox (sandbox.escalate: approved as an exec call): its child, or
        the processes a built-in starts (their plans come from the context's settings)."""
        if self.sandbox is not None:
            return replace(self, sandbox=self.sandbox.unsandboxed(reason))
        off = replace(self.ctx.sandbox, mode=OFF, reason=reason)
        return replace(self, ctx=replace(self.ctx, sandbox=off))

    def run(self) -> ToolResult:
        runner = self.runner
        if runner.base_dir is not None and self.sandbox is not None:
            result = run_in_child(runner.target, runner.base_dir, self.args, self.ctx, self.sandbox,
                                  timeout=runner.timeout or self.ctx.settings.default_timeout,
                                  passthrough=runner.passthrough)
        else:
            result = call(runner.target, runner.base_dir, self.ctx.code_check, self.args, self.ctx)
        limit = runner.max_output or self.ctx.settings.max_output
        # A tool that capped its own output (bash, fetch_url) says so; capping again would lose its markers.
        if len(result.content) > limit and not result.details.get("truncated"):
            result.content, spill = truncate_text(result.content, limit, self.ctx.spill_dir,
                                                  self.ctx.settings.max_saved_output)
            result.details["spill_path"] = str(spill) if spill else None
        return result


def child_paths(base_dir: Path) -> list[Path]:
    """What the child must see, read-only, even under the private /tmp: its tool folder and the Python it
    imports (nami's package, the interpreter's path)."""
    return [base_dir, *(Path(p) for p in sys.path if p and Path(p).is_absolute())]
