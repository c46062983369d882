"""Assembly and the public Python API: settings + trust + tool sources -> a ready Agent.

The CLI, and later the MCP server and batch workers, build agents here, never in cli/.
"""

from __future__ import annotations

from nami_yaml.app.agent import Agent, build_model, load_agent
from nami_yaml.app.project import (
    Project,
    Trust,
    TrustRequest,
    UntrustedProject,
    ensure_trusted,
    open_project,
    read_settings,
    runtime_context,
    tool_settings,
)

__all__ = ["Agent", "Project", "Trust", "TrustRequest", "UntrustedProject", "build_model", "ensure_trusted",
           "load_agent", "open_project", "read_settings", "runtime_context", "tool_settings"]
