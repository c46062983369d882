"""Assembly and the public Python API: settings + trust + tool sources -> a ready Agent.

Every front end (the CLI, ``mcp serve``, batch workers, the Python API) builds its agent or its guards
here (``build_agent``, ``Guards``), never in cli/.
"""

from __future__ import annotations

from nami_yaml.app.agent import Agent, build_agent, load_agent
from nami_yaml.app.assembly import build_model
from nami_yaml.app.guards import Asking, Guards
from nami_yaml.app.options import AgentOptions
from nami_yaml.app.project import (
    Project,
    Trust,
    TrustRequest,
    UntrustedProject,
    ensure_trusted,
    open_project,
    runtime_context,
    tool_settings,
)
from nami_yaml.project_request import ProjectRequest

__all__ = ["Agent", "AgentOptions", "Asking", "Guards", "Project", "Trust", "TrustRequest", "UntrustedProject",
           "build_agent", "build_model", "ensure_trusted", "load_agent", "open_project",
           "ProjectRequest", "runtime_context", "tool_settings"]
