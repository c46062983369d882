"""Running one hook's program: the one subprocess path, in the sandbox planned from the hook's own keys.

A hook reads the workspace and writes nothing there unless its ``sandbox: {writable: …}`` says so; it has
no network unless ``sandbox: {network: true}``; it gets the event as JSON on its standard input and the
workspace as $CLAUDE_PROJECT_DIR and $NAMI_WORKSPACE, in the environment tools get (secrets scrubbed).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nami_yaml.config.hooks import WORKSPACE_VARIABLES, HookSpec
from nami_yaml.runners.base import build_invocation
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.plan import KIND_HOOK, make_destinations, plan_for, remove_unused
from nami_yaml.runtime import RuntimeContext

MAX_HOOK_OUTPUT = 64_000  # what is kept of a hook's stdout and stderr


@dataclass(frozen=True)
class HookRun:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    problem: str | None = None  # it could not run, or the sandbox refused it

    @property
    def failed(self) -> str | None:
        """Why this run gave no answer (it timed out, crashed, could not start), or None."""
        if self.problem:
            return self.problem
        if self.timed_out:
            return "it timed out"
        if self.exit_code not in (0, 2):
            tail = self.stderr.strip().splitlines()[-1:] or [""]
            return f"it exited with {self.exit_code}" + (f": {tail[0][:300]}" if tail[0] else "")
        return None


def named_files(argv: list[str]) -> list[Path]:
    """The files a hook's command line names by absolute path (its program, a script given to an
    interpreter): what it needs to see."""
    found: list[Path] = []
    for word in argv:
        try:
            if os.path.isabs(word) and os.path.isfile(word):
                found.append(Path(word))
        except (OSError, ValueError):
            continue
    return found


def run_hook(spec: HookSpec, payload: dict[str, Any], ctx: RuntimeContext) -> HookRun:
    workspace = str(ctx.workspace)
    options = ProcessOptions(timeout=spec.timeout, max_output=MAX_HOOK_OUTPUT, sandbox=spec.sandbox,
                             env={name: workspace for name in WORKSPACE_VARIABLES})
    argv = spec.argv(ctx.workspace)
    invocation = build_invocation(f"hook {spec.event}", argv, options, ctx, stdin=json.dumps(payload),
                                  kind="hook", sandbox_kind=KIND_HOOK)
    # The workspace is only read, unless the hook declares what it writes. The folders of the files its
    # command names are shown where the sandbox would hide them (the user's ~/.claude/hooks in the home).
    named = named_files(argv)
    sandbox = plan_for(ctx, spec.sandbox, kind=KIND_HOOK, read_only=not spec.sandbox.writable,
                       visible=[folder for file in named for folder in dict.fromkeys((file.parent,
                                                                                    file.resolve().parent))])
    invocation = replace(invocation, sandbox=sandbox)
    if sandbox.refusal:
        return HookRun(None, "", "", problem=sandbox.refusal)
    sealed = [file for file in named if any(folder in file.resolve().parents for folder in sandbox.sealed)]
    if sealed:
        return HookRun(None, "", "", problem=f"{sealed[0]} is in nami's own folders, which no sandboxed process "
                                             "sees: keep hook programs elsewhere (~/.claude/hooks, the project)")
    request = ProcessRequest(argv=invocation.argv, cwd=ctx.workspace, env=invocation.env, stdin=invocation.stdin,
                             timeout=spec.timeout, max_output=MAX_HOOK_OUTPUT, spill_dir=None,
                             cancel=ctx.cancel.child(), max_saved=0, sandbox=sandbox)
    made = make_destinations(sandbox)
    try:
        result = run_process(request)
    finally:
        remove_unused(made)
    problem = None
    if result.exit_code is None and not result.timed_out:
        problem = (result.stderr or "it could not start").strip()[:300]
    return HookRun(result.exit_code, result.stdout, result.stderr, result.timed_out, problem)
