"""The bash built-in: one command line through the same process hygiene as every YAML tool."""

from __future__ import annotations

import shutil

from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.base import build_invocation
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.sandbox.plan import KIND_BASH, bash_needs
from nami_yaml.runtime import RuntimeContext


def bash(command: str, timeout: float | None = None, *, ctx: RuntimeContext) -> ToolResult:
    if not command.strip():
        raise ToolError("command is empty")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte")
    # Resolved from the host PATH, not the child's, so the model cannot change which shell runs.
    shell = shutil.which("bash", path=ctx.host_env.get("PATH")) or shutil.which("bash") or "/bin/bash"

    settings = ctx.settings
    wanted = settings.bash_timeout if timeout is None else float(timeout)
    if wanted <= 0:
        raise ToolError("timeout must be a positive number of seconds")
    limit = min(wanted, settings.bash_max_timeout)
    invocation = build_invocation("bash", [shell, "-c", "--", command],
                                  ProcessOptions(timeout=limit, max_output=settings.max_output), ctx, stdin=None,
                                  sandbox=bash_needs(ctx), sandbox_kind=KIND_BASH)
    result = invocation.run()
    capped = wanted > limit
    if capped:
        result.content += (f"\n[timeout {wanted:g} s was capped to {limit:g} s, the maximum allowed "
                           "(tools.bash.max_timeout in agent.yaml)]")
    result.details.update(timeout=limit, timeout_capped=capped)
    return result
