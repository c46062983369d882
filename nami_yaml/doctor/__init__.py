"""`nami doctor`: is this machine ready to run the agent? Each check returns a result; only the CLI prints.

The checks, in order: Python, agent.yaml (found, valid), its tools (valid), trust, the API key, the endpoint
(reachable, listing models), the model (listed by the server; a local server listing other names is a
warning: many answer any name), optionally one live completion with a tool
call, the programs the tools run (and, asked for, one target's env and programs), the MCP servers of ``mcp_servers:`` (started, if trusted), the sandbox, ripgrep, nami's own folders, and the project's schema copies. The
endpoint is not contacted while an untrusted agent.yaml chooses it or the key variable (one chosen by
$NAMI_BASE_URL, a flag or the user config is).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nami_yaml.config.settings import load_settings
from nami_yaml.doctor.endpoint import endpoint_checks, live_check
from nami_yaml.doctor.local import (
    config_checks,
    folder_check,
    program_check,
    python_check,
    ripgrep_check,
    schema_copies_check,
    untrusted_endpoint,
)
from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.doctor.sandbox import sandbox_check
from nami_yaml.doctor.targets import target_checks
from nami_yaml.doctor.tool_servers import mcp_check
from nami_yaml.project_request import ProjectRequest


def run_doctor(config: str | Path | None = None, *, live: bool = False, env: Mapping[str, str] | None = None,
               cwd: Path | None = None, timeout: float = 10.0, target: str | None = None) -> list[Check]:
    """Every check, in order. Never raises for what it finds: a problem is a FAIL or WARN result.
    ``target``: also that target's env and the programs of the tools that run on it."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    checks = [python_check()]
    found = config_checks(config, env=env, cwd=cwd)
    checks.extend(found.checks)
    withheld = None
    if found.settings is not None:
        withheld = untrusted_endpoint(found.settings, lambda: load_settings(ProjectRequest(cwd=cwd, env=env, discover=False)))
    if withheld is not None:
        checks.append(withheld)
    elif found.settings is not None:
        model_checks = endpoint_checks(found.settings, timeout=timeout)
        checks.extend(model_checks)
        if live:
            reachable = not any(c.name == "endpoint" and c.status == FAIL for c in model_checks)
            checks.append(live_check(found.settings) if reachable else
                          Check("live", WARN, "not tried: the endpoint did not answer"))
    if found.registry is not None:
        checks.append(program_check(found.registry, env=env, workspace=found.workspace or cwd))
        if target is not None and found.settings is not None:
            checks.extend(target_checks(found.settings, found.registry, target, env=env,
                                        workspace=found.workspace or cwd))
    if found.settings is not None and found.registry is not None:
        servers = mcp_check(found.settings, config, env=env, cwd=cwd)
        if servers is not None:
            checks.append(servers)
    checks.append(sandbox_check(found.settings.get("sandbox") if found.settings is not None else None, env))
    checks.append(ripgrep_check(env))
    checks.append(folder_check(env))
    schemas = schema_copies_check(found.project_root or cwd)
    if schemas is not None:
        checks.append(schemas)
    return checks


__all__ = ["FAIL", "OK", "WARN", "Check", "run_doctor"]
