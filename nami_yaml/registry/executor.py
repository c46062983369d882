"""Runs a tool call from the model: parse, validate, apply defaults, render, run. Never raises."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referencing.exceptions import Unresolvable

from nami_yaml.errors import ToolError
from nami_yaml.registry.defaults import Defaults, applied_defaults
from nami_yaml.registry.patterns import PatternTimeout, additional_keys, argument_validator, pattern_budget
from nami_yaml.registry.ref_cycles import ref_problems
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.targets import TARGET_PARAMETER
from nami_yaml.registry.tool import Invocation, Tool
from nami_yaml.result import ToolResult
from nami_yaml.runners.plan_step import PlanStep
from nami_yaml.runners.sandbox.plan import SandboxPlan
from nami_yaml.runtime import CallProgress, RuntimeContext, Target, TargetSet
from nami_yaml.sandbox_settings import SandboxNeeds, expand_paths
from nami_yaml.sensitive_paths import write_reason, write_targets
from nami_yaml.spec.validate import describe_type, error_message
from nami_yaml.spec.yamlpos import format_path

EXEC = "exec"


@dataclass
class PreparedToolCall:
    """A call that passed validation and rendering: it can be shown, decided on, dry-run, run or
    cancelled (the loop's PreparedCall protocol)."""

    name: str
    arguments: dict[str, Any]
    risk: str
    invocation: Invocation
    ctx: RuntimeContext  # the call's own context: cancelling it stops this call only
    risk_reason: str | None = None  # why the risk is higher than the tool's own (a write that runs code)
    # Asked again just before running a write prepared as harmless: the path may lead elsewhere by now.
    recheck: Callable[[], str | None] | None = None
    target: str | None = None  # the target it runs on (agent.yaml targets:), for approvals and the audit log

    @property
    def kind(self) -> str:
        return self.invocation.kind

    def cancel(self) -> None:
        self.ctx.cancel.set()

    @property
    def stops_when_cancelled(self) -> bool:
        """Whether run() returns soon once cancelled (a process it kills), with what it has so far: such a
        call that runs alone runs on the loop's own thread (agent/tool_phase.py)."""
        return bool(getattr(self.invocation, "stops_when_cancelled", False))

    @property
    def progress(self) -> CallProgress | None:
        """Where the running call reports how far it is (the loop connects it to the status line)."""
        return self.ctx.progress

    @property
    def trace(self) -> dict[str, str] | None:
        """The call's carrier of trace context (RuntimeContext.trace), filled by a tracer before it runs."""
        return self.ctx.trace

    def describe(self) -> str:
        return self.invocation.describe()

    def plan(self) -> dict[str, Any]:
        return self.invocation.plan()

    @property
    def plan_step(self) -> PlanStep | None:
        """The call's plan step (a tool with ``plan:``): run before it is asked about (app/guards.py)."""
        step = getattr(self.invocation, "step", None)
        return step if isinstance(step, PlanStep) else None

    def plan_digest(self) -> str | None:
        """What an approval of this call binds of its plan: the plan file's SHA-256 as it is now (else that
        of the output shown); None for a call with no plan step, or one not run yet."""
        step = self.plan_step
        return step.digest_now() if step is not None else None

    def sandbox_plan(self) -> SandboxPlan | None:
        """The sandbox the call's process runs in; None when it starts none (or nothing plans one)."""
        plan = getattr(self.invocation, "sandbox_plan", None)  # process and entry-point invocations have one
        return plan() if plan is not None else None

    def unsandboxed(self, reason: str) -> PreparedToolCall | None:
        """The same call to run once more without the sandbox, as an exec call (``sandbox.escalate``: only
        once a person said yes to it); None when it cannot run otherwise (an MCP tool, a file tool)."""
        rerun = getattr(self.invocation, "unsandboxed", None)
        if rerun is None or self.sandbox_plan() is None:
            return None
        return replace(self, invocation=rerun(reason), risk=EXEC, recheck=None,
                       risk_reason=f"runs without the sandbox ({reason})")

    def run(self) -> ToolResult:
        late = self.recheck() if self.recheck is not None and self.risk_reason is None else None
        if late:
            return ToolResult.error(f"{self.name} was approved as a {self.risk}, but the path now leads where a "
                                    f"write runs code ({late}); call it again to ask for that approval")
        try:
            result = self.invocation.run()
        except ToolError as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:  # a runner's failure is the model's information, not the loop's crash
            return ToolResult.error(f"{type(exc).__name__}: {exc}")
        return result if isinstance(result, ToolResult) else ToolResult(str(result))


class Executor:
    """Binds a registry to a runtime context; the agent loop's toolbox."""

    def __init__(self, registry: Registry, ctx: RuntimeContext):
        self.registry = registry
        self.ctx = ctx
        self._definitions: tuple[tuple[str, ...], list[dict[str, Any]]] | None = None
        self._validators: dict[str, Any] = {}
        self._defaults: dict[str, Defaults] = {}

    def definitions(self) -> list[dict[str, Any]]:
        """The tools sent: those sent from the start, then the on-demand groups loaded so far (appended, so
        the list only grows). The same list object while nothing new is loaded."""
        loaded = self.ctx.loaded_groups.names
        if self._definitions is None or self._definitions[0] != loaded:
            self._definitions = (loaded, self.registry.definitions(loaded))
        return self._definitions[1]

    def prepare(self, name: str, raw_arguments: str | dict[str, Any] | None) -> PreparedToolCall | ToolResult:
        tool = self.registry.get(name)
        if tool is None:
            return ToolResult.error(self.registry.unknown(name))
        arguments = self._parse(tool, raw_arguments)
        if isinstance(arguments, ToolResult):
            return arguments
        problems = self._validate(tool, arguments)
        if problems:
            listing = "\n".join(f"- {p}" for p in problems)
            unloaded = self.registry.is_on_demand(tool) and tool.group not in self.ctx.loaded_groups.names
            hint = f" (load_tools {tool.group!r} first to see its parameters)" if unloaded else ""
            return ToolResult.error(f"invalid arguments for '{name}':\n{listing}\nFix the arguments and call again{hint}.")
        arguments = self._defaults_of(tool).fill(arguments)
        target = None
        if tool.targets is not None:
            arguments, target = self._target(tool.targets, arguments)
            if target is None:  # the enum allows none other; a schema the author loosened might
                return ToolResult.error(f"{name}: no target is named {arguments.get(TARGET_PARAMETER)!r} "
                                        f"(targets: {', '.join(tool.targets.names())})")
        ctx = self.ctx.for_call(target)
        try:
            invocation = tool.runner.invocation(tool.name, arguments, ctx)
        except ToolError as exc:
            return ToolResult.error(f"{name}: {exc}")
        except Exception as exc:
            return ToolResult.error(f"{name}: {type(exc).__name__}: {exc}")
        _allow_writes(invocation, tool, arguments, ctx)
        prepared = PreparedToolCall(tool.name, arguments, tool.risk, invocation, ctx,
                                    target=target.name if target is not None else None)
        return self._with_write_risk(prepared, tool)

    @staticmethod
    def _target(targets: TargetSet, arguments: dict[str, Any]) -> tuple[dict[str, Any], Target | None]:
        """The call's target: the pinned one (put into the arguments, so rules and the audit log see it as
        any argument), else the one the model chose (validated against the enum) or the default."""
        if targets.pinned is not None:
            arguments = {**arguments, TARGET_PARAMETER: targets.pinned}
        return arguments, targets.get(arguments.get(TARGET_PARAMETER))

    def _with_write_risk(self, call: PreparedToolCall, tool: Tool) -> PreparedToolCall | ToolResult:
        """A write into a path where writing runs code (sensitive_paths), or outside the workspace and the
        declared writable areas, needs exec approval; a write into what the sandbox hides is refused."""
        if not tool.writes:
            return call
        written = [reading for name in tool.writes for value in [call.arguments.get(name)]
                   for path in (value if isinstance(value, list) else [value]) if isinstance(path, str) and path
                   for reading in tilde_readings(path, self.ctx.host_env)]
        # Judged from where the process writes (its cwd:), the very paths _allow_writes mounts: judging from
        # the workspace let `cwd: docs` plus a link docs/cfg -> ~/.config/git write the git config unasked.
        base = Path(getattr(call.invocation, "cwd", None) or self.ctx.workspace)
        plan = call.sandbox_plan()
        if plan is not None and plan.active:
            for path in written:
                hidden = next((folder for target in write_targets(base, path)
                               for folder in (*plan.hidden, *plan.sealed) if _inside(target, folder)), None)
                if hidden is not None:
                    return ToolResult.error(f"{tool.name}: {path!r} is inside {hidden}, which the sandbox hides from "
                                            "tools (credentials, nami's own folders): nothing is written there")
        areas = self._writable_areas(tool)

        def reason() -> str | None:
            for path in written:
                found = write_reason(base, path, self.ctx.protected_paths)
                if found:
                    return found
                if not all(any(_inside(target, area) for area in areas) for target in write_targets(base, path)):
                    return (f"{path!r}: outside the workspace and the writable areas (sandbox.writable), where a "
                            "write can change what runs later (a shell's start-up file, git's config, an SSH key)")
            return None

        found = reason()
        if found:
            call.risk, call.risk_reason = EXEC, f"writes {found}"
        else:
            call.recheck = reason
        return call

    def _writable_areas(self, tool: Tool) -> list[Path]:
        """The workspace and the writable areas the settings and the tool declare (``sandbox.writable``)."""
        declared = getattr(getattr(tool.runner, "options", None), "sandbox", None) or SandboxNeeds()
        written = (*self.ctx.sandbox.writable, *declared.writable)
        return [self.ctx.workspace, *(Path(os.path.realpath(p)) for p in
                                      expand_paths(written, self.ctx.host_env, self.ctx.workspace))]

    def execute(self, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolResult:
        prepared = self.prepare(name, raw_arguments)
        return prepared if isinstance(prepared, ToolResult) else prepared.run()

    @staticmethod
    def _parse(tool: Tool, raw: str | dict[str, Any] | None) -> dict[str, Any] | ToolResult:
        if isinstance(raw, dict):
            return raw
        text = (raw or "").strip()
        if not text:  # several providers send "" for a call without arguments
            return {}
        try:
            value = _ARGUMENTS.decode(text)
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError):
                return ToolResult.error(f"the arguments for '{tool.name}' are not valid JSON: {exc}")
            return ToolResult.error(
                f"the arguments for '{tool.name}' are not valid JSON ({exc.msg} at line {exc.lineno} "
                f"column {exc.colno}). Send one JSON object, e.g. {_example(tool)}"
            )
        if not isinstance(value, dict):
            return ToolResult.error(
                f"the arguments for '{tool.name}' must be a JSON object, got {describe_type(value)}. "
                f"Send e.g. {_example(tool)}"
            )
        return value

    def _validate(self, tool: Tool, arguments: dict[str, Any]) -> list[str]:
        check = self._validators.get(tool.name)
        if check is None:
            check = self._validators[tool.name] = argument_validator(tool.parameters)
        try:
            with pattern_budget():
                errors = sorted(check.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
                return [self._problem(error) for error in errors]
        except PatternTimeout as exc:
            return [str(exc)]
        except Unresolvable as exc:
            # The loader refuses non-local refs; a tool from elsewhere (or a dangling #/...) ends here.
            return [f"the tool's parameter schema has a $ref that cannot be resolved ({exc}); "
                    "references are only looked up inside the schema itself"]
        except RecursionError:
            # The loader refuses such a schema (registry/ref_cycles.py); a tool from elsewhere ends here.
            problems = ref_problems(tool.parameters)
            why = problems[0][1] if problems else "it recurses without end"
            return [f"the tool's parameter schema cannot be used: {why}"]

    def _defaults_of(self, tool: Tool) -> Defaults:
        found = self._defaults.get(tool.name)
        if found is None:
            found = self._defaults[tool.name] = applied_defaults(tool.parameters)
        return found

    @staticmethod
    def _problem(error: Any) -> str:
        where = format_path(tuple(error.absolute_path))
        if error.validator == "additionalProperties" and isinstance(error.schema, dict) \
                and isinstance(error.instance, dict) and error.validator_value is False:
            # The object that failed may be nested (an object parameter), so its own schema says what is known.
            known = ", ".join(error.schema.get("properties", {})) or "none"
            extra = sorted(additional_keys(error.instance, error.schema))
            return f"{where}: unknown parameter(s) {', '.join(map(repr, extra))}; known: {known}"
        return f"{where}: {error_message(error)}"


def _allow_writes(invocation: Invocation, tool: Tool, arguments: dict[str, Any], ctx: RuntimeContext) -> None:
    """Make the destinations of the call's ``writes:`` parameters writable in its sandbox, each alone (a
    path outside the workspace, and nothing beside it). Planned now so the dry run and the approval
    prompt show it; it takes effect only by running, and a call runs only once it has the approval its
    risk needs (a write into a path that runs code is raised to exec by _with_write_risk)."""
    allow = getattr(invocation, "allow_writes", None)  # process invocations: the one place a plan is kept
    if allow is None or not tool.writes:
        return
    base = Path(getattr(invocation, "cwd", ctx.workspace))  # a relative path is the process's, from its cwd
    paths: list[Path] = []
    for name in tool.writes:
        value = arguments.get(name)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str) and path and "\x00" not in path:
                # Where the write lands: links followed, as the kernel will (the prompt shows that path).
                paths += [Path(os.path.realpath(base / reading)) for reading in tilde_readings(path, ctx.host_env)]
    if paths:
        allow(paths)



def tilde_readings(value: str, env: Mapping[str, str]) -> list[str]:
    """A ``writes:`` value as a program may read it: as written, and for ``~`` or ``~/…`` also in the home
    folder, expanded as nami expands ``~`` everywhere (sandbox_settings.expand_paths: $HOME). A program
    given ``~/.bashrc`` as an argument writes ./~/.bashrc, unless it expands ``~`` itself (a shell's
    eval, Python's expanduser): both places are judged, and both are mounted once approved."""
    if value != "~" and not value.startswith("~/"):
        return [value]
    return [value, *(str(p) for p in expand_paths([value], env, Path("/")))]


def _refuse_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON and slip past minimum/maximum.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e400 parses to inf
        raise ValueError(f"{text} is not a finite number")
    return number


_ARGUMENTS = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)  # made once, not per call


def _example(tool: Tool) -> str:
    required = tool.parameters.get("required") or list(tool.parameters.get("properties", {}))[:1]
    return json.dumps({name: "..." for name in required})


def _inside(path: Path, folder: Path) -> bool:
    """``path`` is ``folder`` or below it (whole components; both normalized)."""
    return path == folder or folder in path.parents
