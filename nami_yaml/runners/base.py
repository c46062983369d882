"""What command and script tools share: working folder, environment, and turning a process into a result."""

from __future__ import annotations

import os
import re
import shlex
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nami_yaml.display import plural
from nami_yaml.env_secrets import (
    NON_INTERACTIVE_ENV,
    child_environment,
    is_secret,
    is_secret_name,
    is_secret_value,
    minimal_host_env,
    traced_env,
)
from nami_yaml.errors import ToolError
from nami_yaml.result import Streams, ToolResult
from nami_yaml.runners.filters import rendered_shape
from nami_yaml.runners.options import OutputShape, ProcessOptions
from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.describe import describe as describe_sandbox
from nami_yaml.runners.sandbox.plan import KIND_TOOL, SandboxPlan, make_destinations, plan_for, remove_unused
from nami_yaml.runners.shape import shape_result
from nami_yaml.runners.template import TARGET_PREFIX
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxNeeds

_HOST_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def working_folder(options: ProcessOptions, ctx: RuntimeContext) -> Path:
    if not options.cwd:
        return ctx.workspace
    folder = (ctx.workspace / options.cwd).resolve()
    if os.path.commonpath([folder, ctx.workspace]) != str(ctx.workspace):
        raise ToolError(f"the tool's cwd {options.cwd!r} is outside the workspace {ctx.workspace}")
    if not folder.is_dir():
        raise ToolError(f"the tool's cwd {options.cwd!r} is not a folder in the workspace {ctx.workspace}")
    return folder


TARGET_VARIABLE = "NAMI_TARGET"  # the call's target name; its vars are NAMI_TARGET_<NAME>


def target_variables(ctx: RuntimeContext) -> dict[str, str]:
    """``$NAMI_TARGET`` and ``$NAMI_TARGET_<VAR>`` of the call's target (none for a call on no target)."""
    if ctx.target is None:
        return {}
    return {TARGET_VARIABLE: ctx.target.name,
            **{f"{TARGET_VARIABLE}_{name.upper()}": value for name, value in ctx.target.vars.items()}}


def template_values(args: dict[str, Any], ctx: RuntimeContext) -> dict[str, Any]:
    """What a command or stdin template is rendered with: the arguments, and ``target.<var>`` for each var
    of the call's target (a var the target lacks is absent, so an optional group holding it is left out)."""
    if ctx.target is None:
        return args
    return {**args, **{TARGET_PREFIX + name: value for name, value in ctx.target.vars.items()}}


def fixed_environment(options: ProcessOptions, ctx: RuntimeContext) -> dict[str, str]:
    """The tool's ``env:`` values, and then its target's, with ``${NAME}`` taken from the host under the same
    secret rules (the tool's ``env_passthrough`` covers both: the target only says which values)."""
    fixed: dict[str, str] = {}
    sources = [("env", options.env)]
    if ctx.target is not None:  # on top of the tool's own: the call runs against that environment
        sources.append((f"target {ctx.target.name}'s env", ctx.target.env))
    for what, values in sources:
        for key, value in values.items():
            if key in ctx.protected_env:
                raise ToolError(f"{what} sets {key}, which is never given to tools")
            fixed[key] = _HOST_REF.sub(lambda match, what=what: _host_value(match.group(1), what, options, ctx),
                                       str(value))
    return fixed


def _host_value(name: str, what: str, options: ProcessOptions, ctx: RuntimeContext) -> str:
    if name in ctx.protected_env:
        raise ToolError(f"{what} refers to ${{{name}}}, which is never given to tools")
    secret = is_secret_name(name, ctx.env_scrub) or (
        name in ctx.host_env and is_secret_value(ctx.host_env[name], ctx.env_scrub))
    if secret and name not in options.env_passthrough:
        raise ToolError(f"{what} refers to ${{{name}}}, which looks secret; list it in env_passthrough to allow it")
    if name not in ctx.host_env:
        raise ToolError(f"{what} refers to ${{{name}}}, which is not set")
    return ctx.host_env[name]


@dataclass
class ProcessInvocation:
    """A fully rendered process call: shown by approval prompts and --dry-run, then run."""

    tool: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    env_changes: dict[str, str]
    stdin: bytes | None
    timeout: float
    max_output: int
    ctx: RuntimeContext
    sandbox: SandboxPlan  # decided when the call is prepared, so dry runs and approvals show it
    label: str | None = None  # replaces the argv in describe(), e.g. for scripts
    kind: str = "command"
    script: str | None = None  # the script text of a script tool, shown by approval and dry run
    stops_when_cancelled = True  # run() only waits on its process, which it kills once cancelled
    output: OutputShape | None = None  # how its stdout is shaped for the model (runners/shape.py)
    stages: list[list[str]] | None = None  # a pipeline's rendered stages (its argv is nami's launcher)
    pass_fds: tuple[int, ...] = ()  # descriptors it inherits (a sealed plan file, runners/plan_step.py)

    def describe(self) -> str:
        text = self.label or shlex.join(self.argv)
        if self.stdin is not None:
            text += f" < stdin ({plural(len(self.stdin), 'byte')})"
        return text

    def plan(self) -> dict[str, Any]:
        removed = sorted(k for k in self.ctx.host_env if k not in self.env)
        plan: dict[str, Any] = {
            "argv": self.argv,
            "cwd": str(self.cwd),
            "stdin": None if self.stdin is None else self.stdin.decode("utf-8", "replace"),
            "timeout": self.timeout,
            "env_set": self.env_changes,
            "env_removed": removed,
        }
        if self.script is not None:
            plan["script"] = self.script
        if self.stages is not None:
            plan["pipeline"] = self.stages
        plan["sandbox"] = describe_sandbox(self.sandbox, self.sandbox.home)
        return plan

    def sandbox_plan(self) -> SandboxPlan:
        return self.sandbox

    def unsandboxed(self, reason: str) -> ProcessInvocation:
        """The same call without the sandbox (sandbox.escalate: a person approved it as an exec call)."""
        return replace(self, sandbox=self.sandbox.unsandboxed(reason))

    def allow_writes(self, paths: list[Path]) -> None:
        """Make the approved ``writes:`` destinations of this call writable for it (and nothing else)."""
        self.sandbox = self.sandbox.allowing_writes(paths)

    def run(self) -> ToolResult:
        request = ProcessRequest(
            argv=self.argv, cwd=self.cwd, env=traced_env(self.env, self.ctx.trace), stdin=self.stdin,
            timeout=self.timeout, max_output=self.max_output, spill_dir=self.ctx.spill_dir, cancel=self.ctx.cancel,
            max_saved=self.ctx.settings.max_saved_output, sandbox=self.sandbox, pass_fds=self.pass_fds,
        )
        made = make_destinations(self.sandbox)
        try:
            result = run_process(request)
        finally:
            remove_unused(made)
        details = {
            "exit_code": result.exit_code, "timed_out": result.timed_out, "interrupted": result.interrupted,
            "truncated": result.truncated, "saved_capped": result.saved_capped,
            "spill_path": str(result.spill_path) if result.spill_path else None,
            "duration": round(result.duration, 3),
        }
        if result.sandbox_failure is not None:
            details["sandbox_failure"] = result.sandbox_failure.as_dict()
        streams = Streams(result.stdout, result.stderr, tuple(result.status_lines()))
        withheld = withheld_variables(self.script, self.env, self.ctx) if self.script else []
        if withheld:
            details["env_withheld"] = withheld
        if self.output is None or not self.output.shapes:
            content = result.format()
            if withheld:
                content += (f"\n[nami did not pass {', '.join('$' + n for n in withheld)} to the script: "
                            f"{'it looks' if len(withheld) == 1 else 'they look'} like a secret (a tool file's "
                            f"env_passthrough: [{', '.join(withheld)}] passes {'it' if len(withheld) == 1 else 'them'})]")
            return ToolResult(content=content, ok=result.ok, details=details, streams=streams)
        shaped = shape_result(result, self.output, max_output=self.max_output, spill_dir=self.ctx.spill_dir,
                              max_saved=self.ctx.settings.max_saved_output)
        details.update(truncated=shaped.truncated, spill_path=str(shaped.spill_path) if shaped.spill_path else None,
                       output=shaped.details)
        return ToolResult(content=shaped.content, ok=result.ok, details=details, streams=streams, value=shaped.value)


_SCRIPT_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def withheld_variables(script: str, env: Mapping[str, str], ctx: RuntimeContext) -> list[str]:
    """The variables a script reads that the host has and nami kept from it as secrets (secret-looking,
    protected, scrubbed): named in its result, so a script that got one empty says why, not in silence."""
    host = ctx.host_env
    return sorted({name for name in _SCRIPT_VARIABLE.findall(script) if name in host and name not in env
                   and (is_secret(name, host[name], ctx.env_scrub) or name in ctx.protected_env)})


def build_invocation(
    tool: str,
    argv: list[str],
    options: ProcessOptions,
    ctx: RuntimeContext,
    *,
    stdin: str | None,
    call_env: dict[str, str] | None = None,
    drop_env: tuple[str, ...] = (),
    label: str | None = None,
    kind: str = "command",
    script: str | None = None,
    sandbox: SandboxNeeds | None = None,
    sandbox_kind: str = KIND_TOOL,
    visible: Sequence[Path] = (),
    stages: list[list[str]] | None = None,
    values: Mapping[str, Any] | None = None,
) -> ProcessInvocation:
    """The call as it will run; ``sandbox`` (default: the tool's ``options.sandbox``) is what it declares
    it needs, planned here with the project's settings (runners/sandbox/plan.py); ``visible``: paths of nami's
own the process needs to see read-only (a pipeline's launcher); ``values``: what the tool's ``output:``
filters and select are rendered with (the call's template values)."""
    fixed = fixed_environment(options, ctx)
    extra = {**fixed, **(call_env or {}), **target_variables(ctx)}
    host = ctx.host_env if options.host_env else minimal_host_env(ctx.host_env, options.env_passthrough)
    env = child_environment(host, passthrough=options.env_passthrough, extra=extra,
                            protected=ctx.protected_env, scrub=ctx.env_scrub)
    for name in drop_env:
        env.pop(name, None)
    changes = {k: v for k, v in {**NON_INTERACTIVE_ENV, **extra}.items() if ctx.host_env.get(k) != v}
    return ProcessInvocation(
        tool=tool, argv=argv, cwd=working_folder(options, ctx), env=env, env_changes=changes,
        stdin=None if stdin is None else stdin.encode("utf-8"),
        timeout=options.timeout or ctx.settings.default_timeout,
        max_output=options.max_output or ctx.settings.max_output, ctx=ctx, label=label, kind=kind, script=script,
        output=options.output if options.output is None or values is None else rendered_shape(options.output, values),
        stages=stages,
        # A path the tool declares (`reads: [$KUBECONFIG]`) is read from the environment it runs in: its own
        # fixed env and its target's, written in trusted files; never from values the model passes.
        # (A view, not a merged copy of the whole environment at every call: only a planned sandbox reads it.)
        # A tool named bash (the built-in, or a project's own) is what command rules match: the programs
        # they deny by name are masked in its sandbox.
        sandbox=plan_for(ctx, options.sandbox if sandbox is None else sandbox, kind=sandbox_kind, visible=visible,
                         env=ChainMap(target_variables(ctx), fixed, ctx.host_env), masks=tool == "bash"),
    )
