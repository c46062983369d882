"""`nami doctor`'s check of agent.yaml's ``mcp_servers:``: each server started as a run would start it, its
tools counted, and what went wrong said per server. Servers of an untrusted project are not started."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from nami_yaml.config.effective import Effective
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.display import visible
from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.errors import NamiError
from nami_yaml.project_request import ProjectRequest


def mcp_check(effective: Effective, config: str | Path | None, *, env: Mapping[str, str],
              cwd: Path) -> Check | None:
    """None when agent.yaml names no MCP servers. ``config``: as given to doctor (None: found from ``cwd``)."""
    specs = server_specs(effective)
    if not specs:
        return None
    names = ", ".join(spec.name for spec in specs)
    from nami_yaml.mcp import McpUnavailable, require_sdk

    try:
        require_sdk("agent.yaml's mcp_servers")
    except McpUnavailable as exc:
        return Check("mcp", FAIL, str(exc))
    from nami_yaml.app.project import open_project

    try:
        request = ProjectRequest(config=None if config is None else str(config), cwd=cwd, env=env)
        with open_project(request, tool_servers=False) as project:
            if not project.is_trusted():
                return Check("mcp", WARN, f"{names} not started: this agent.yaml is not trusted yet (`nami trust`)")
            project.start_servers()
            counts = Counter(getattr(tool.runner, "server", None) for tool in project.registry
                             if tool.runner.kind == "mcp")
            notices = [visible(notice) for notice in project.take_notices()]
    except NamiError as exc:
        return Check("mcp", FAIL, f"{names}: {visible(str(exc))}")
    summary = ", ".join(f"{spec.name} ({counts[spec.name]} tool{'s' if counts[spec.name] != 1 else ''})"
                        for spec in specs)
    if notices:
        return Check("mcp", WARN if sum(counts.values()) else FAIL, summary, details=notices)
    return Check("mcp", OK, summary)
