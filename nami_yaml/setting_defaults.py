"""The default of every setting agent.yaml may leave out, written once: config/settings layers the files over
these (``nami config`` shows each as ``default``), config/sections types them, and what runs without a
config takes its defaults from here too (runtime.ToolSettings, agent.AgentLoop, session compaction, the
policy's permissions). The JSON Schema's ``default``s must agree (tests/config/test_sections.py).

A leaf: plain data, importing nothing of nami. ``sandbox:``'s defaults are sandbox_settings.SandboxSettings'.
Settings with no default (``model.name``, ``limits.max_cost``, ``audit.path``, ``telemetry.endpoint``, ...) are not here.
"""

from __future__ import annotations

from typing import Any

MODEL: dict[str, Any] = {"provider": "deepseek", "stream": True, "retries": 2, "timeout": 600, "options": {},
                         "quirks": {}}
TOOLS: dict[str, Any] = {
    "builtin": "default",
    "files": [],
    "on_demand": "auto",
    "eager": [],
    "files_on_demand": 20_000,  # characters of the project's own tool definitions sent at start, at most
    "bash": {"timeout": 120, "max_timeout": 600},
    "fetch_url": {"allow_hosts": [], "max_bytes": 5_000_000, "timeout": 30},
}
LIMITS: dict[str, Any] = {
    "max_steps": 50, "tool_timeout": 120, "max_output": 50_000, "max_parallel_tools": 4, "max_agent_depth": 2,
    "max_saved_output": 64_000_000, "schema_retries": 2, "max_response_bytes": 4_000_000,
    "max_tool_calls_per_turn": 64,
}
PERMISSIONS: dict[str, str] = {"write": "ask", "exec": "ask"}
COMPACTION: dict[str, Any] = {"enabled": True, "threshold": 0.8, "reserve": 4096, "keep_recent": 20_000}
# What nami takes from other agents' conventions (docs/conventions.md): AGENTS.md into the system prompt, cut at
# max_bytes (Codex's project_doc_max_bytes is 32 KiB too), and skills found under .agents/skills.
INSTRUCTIONS: dict[str, Any] = {"agents_md": True, "max_bytes": 32_768, "agents_skills": True}
# Durations in seconds (a file may also write "30m"). ``path`` has no default here: the
# queue folder is in nami's state folder (nami_yaml.xdg), found where it is used.
APPROVALS: dict[str, Any] = {"via": "terminal", "timeout": 1800, "expires": 900}
# "auto": traced when the OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables name a collector (nami_yaml/telemetry).
TELEMETRY: dict[str, Any] = {"enabled": "auto", "service_name": "nami", "content": False, "resource_attributes": {}}

# The settings' defaults by top-level key, in the order `nami config` lists them (then ``sandbox``).
SECTIONS: dict[str, dict[str, Any]] = {"model": MODEL, "tools": TOOLS, "limits": LIMITS, "permissions": PERMISSIONS,
                                       "compaction": COMPACTION, "instructions": INSTRUCTIONS, "approvals": APPROVALS,
                                       "telemetry": TELEMETRY}
