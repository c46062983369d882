"""MCP servers as a tool source of a project (agent.yaml ``mcp_servers:``): started in parallel once the
project may run, their tools appended to the registry, stopped with the project or when nami exits.

What goes wrong (a server that does not start, the mcp extra missing, a tool left out) becomes a notice:
reported once, and the agent goes on without those tools.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from nami_yaml.app.toolset import SKILL_READER, grouped_registry
from nami_yaml.config.effective import Effective
from nami_yaml.config.loaded import loaded_files
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.trust import covered_files, hashed, needs_trust
from nami_yaml.registry.groups import LOADER
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.vetting import CodeVetting
from nami_yaml.runtime import RuntimeContext
from nami_yaml.xdg import default_state_dir


class ToolServers:
    """The project's running MCP servers (if any), and the notices not yet reported."""

    def __init__(self, servers: Any = None, notices: list[str] | None = None, *, started: bool = True):
        self.servers = servers  # nami_yaml.mcp.client.McpServers, when the SDK is there and servers are named
        self.started = started  # False until the project's servers were started (or found not startable)
        self._notices = list(notices or [])
        self._lock = threading.Lock()

    def take_notices(self) -> list[str]:
        with self._lock:
            notices, self._notices = self._notices, []
        if self.servers is not None:
            notices.extend(self.servers.take_notices())
        return notices

    def note(self, message: str) -> None:
        with self._lock:
            self._notices.append(message)

    def listen(self, sink: Callable[[str, str, str], None]) -> None:
        """Hand the servers' log messages (server, level, redacted text) to ``sink``, unless someone already
        listens (a sub-agent shares its parent's servers and its parent's screen)."""
        if self.servers is not None and self.servers.on_log is None:
            self.servers.on_log = sink

    def close(self) -> None:
        if self.servers is not None:
            self.servers.close()


def start_tool_servers(settings: Effective, ctx: RuntimeContext, registry: Registry,
                       trusted_digest: str | None = None) -> tuple[ToolServers, Registry]:
    """Start the servers the settings name and wait until each is ready or failed: the running servers, and
    the registry with their tools added. Never raises for a server's failure.

    ``trusted_digest``: for a project that needed trust, the fingerprint it was trusted with. Its own
    servers start only if its files are still those (the model may have written them since), and a Python
    server's imports are vetted against them as it runs (runners/vetting.py)."""
    specs = server_specs(settings)
    if not specs:
        return ToolServers(), registry
    notices: list[str] = []
    vetting: dict[str, CodeVetting] = {}
    if needs_trust(settings):
        digest, hashes = hashed(covered_files(settings))
        if digest != trusted_digest:
            mine = [spec for spec in specs if spec.in_project]
            specs = [spec for spec in specs if not spec.in_project]
            notices.append(f"MCP servers {', '.join(s.name for s in mine)} not started: the project's files changed "
                           "since it was trusted (`nami trust`)")
        else:
            assert settings.config_path is not None
            vetting = {code.name: CodeVetting.of(settings.config_path, code.folders, hashes)
                       for code in loaded_files(settings, project_only=True).servers}
    if not specs:
        return ToolServers(notices=notices), registry
    from nami_yaml.mcp import McpUnavailable, require_sdk

    names = ", ".join(spec.name for spec in specs)
    try:
        require_sdk(f"agent.yaml's mcp_servers ({names})")
    except McpUnavailable as exc:
        return ToolServers(notices=[*notices, f"MCP servers not started: {exc}"]), registry
    from nami_yaml.mcp.client import McpServers

    servers = McpServers(specs, workspace=ctx.workspace, host_env=ctx.host_env, protected_env=ctx.protected_env,
                         scrub=ctx.env_scrub, log_dir=server_log_dir(ctx.workspace), vetting=vetting,
                         context=ctx)
    started = ToolServers(servers, notices)
    servers.start()
    tools: dict[str, Tool] = {}
    for tool in servers.tools():
        # Another server's tool can have the same name (servers fx_ and fx: fx___echo): the first keeps it.
        loaded = registry.get(tool.name) or tools.get(tool.name)
        if loaded is not None:
            started.note(f"MCP tool {tool.name} left out: a tool of that name is already loaded ({loaded.source})")
            continue
        tools[tool.name] = replace(tool, group=getattr(tool.runner, "server", None))  # sent on demand, maybe
    has_skills = SKILL_READER in registry
    # The reader load_tools is added again if the servers' tools make groups worth loading on demand.
    own = [tool for tool in registry if tool.name != LOADER or not tool.builtin]
    return started, grouped_registry(settings, [*own, *tools.values()], has_skills=has_skills)


def server_log_dir(workspace: Path) -> Path:
    """One folder of server logs per workspace: two projects' servers named alike (``github``) must not share
    a log, since a failure notice shows the log's last lines."""
    digest = hashlib.sha256(os.fsencode(os.path.abspath(workspace))).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(os.path.abspath(workspace)))[:40] or "root"
    return default_state_dir() / "mcp" / f"{readable}-{digest}"


def not_started(settings: Effective, why: str) -> ToolServers:
    """The notice for servers that are named but may not start (an untrusted project, say)."""
    specs = server_specs(settings)
    if not specs:
        return ToolServers()
    return ToolServers(notices=[f"MCP servers {', '.join(s.name for s in specs)} not started: {why}"])
