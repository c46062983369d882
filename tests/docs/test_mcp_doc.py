"""docs/mcp.md: the client configs it shows (Claude Code, Codex, Cursor, Goose) parse in their own formats
and start `nami mcp serve`; its agent.yaml example passes `nami check`'s reading."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from nami_yaml.app.toolset import build_registry
from nami_yaml.config.mcp_servers import check_problems, server_specs
from nami_yaml.config.settings import load_settings
from nami_yaml.policy.layers import rule_problems
from nami_yaml.project_request import ProjectRequest

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(DOC.read_text(encoding="utf-8")) if lang == language]


def test_the_json_configs_start_nami_mcp_serve() -> None:
    servers = [server for body in blocks("json") for server in json.loads(body)["mcpServers"].values()]
    commands = [server for server in servers if "command" in server]
    assert len(commands) == 2 and all(s["command"] == "nami" and s["args"][:2] == ["mcp", "serve"] for s in commands)
    assert any(server.get("url") == "http://127.0.0.1:8765/mcp" for server in servers)


def test_the_codex_config_is_toml_that_starts_nami_mcp_serve() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11")
    (body,) = blocks("toml")
    server = tomllib.loads(body)["mcp_servers"]["nami"]
    assert server["command"] == "nami" and server["args"][:2] == ["mcp", "serve"]


def test_the_goose_config_is_a_stdio_extension_running_nami_mcp_serve() -> None:
    goose = [yaml.safe_load(body) for body in blocks("yaml") if body.startswith("# not a nami file:")]
    assert len(goose) == 1
    extension = goose[0]["extensions"]["nami"]
    assert extension["type"] == "stdio" and extension["cmd"] == "nami" and extension["args"][:2] == ["mcp", "serve"]


def test_the_mcp_servers_example_reads_cleanly(tmp_path: Path) -> None:
    (example,) = [body for body in blocks("yaml") if body.startswith("mcp_servers:")]
    path = tmp_path / "agent.yaml"
    path.write_text(example)
    effective = load_settings(ProjectRequest(config=str(path), env={}, cwd=tmp_path, user_config=False))
    assert [spec.name for spec in server_specs(effective)] == ["github", "docs"]
    assert rule_problems(effective, build_registry(effective)) == []  # rules on tools the servers will list
    assert [p for p in check_problems(effective) if p.is_error] == []
