"""`nami doctor` starts agent.yaml's MCP servers as a run would (only once trusted) and counts their tools."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.programs import need_mcp

need_mcp()

from nami_yaml.config.settings import load_settings  # noqa: E402
from nami_yaml.config.trust import remember, trust_state  # noqa: E402
from nami_yaml.doctor import FAIL, WARN, run_doctor  # noqa: E402
from nami_yaml.project_request import ProjectRequest  # noqa: E402
from tests.mcp.helpers import FIXTURE  # noqa: E402


def write_project(folder: Path, *servers: tuple[str, list[str]]) -> None:
    entries = "".join(f"  {name}: {{command: {json.dumps(sys.executable)}, args: {json.dumps(args)}}}\n"
                      for name, args in servers)
    (folder / "agent.yaml").write_text("model: {name: m, base_url: 'http://127.0.0.1:9/v1'}\n"
                                       "tools: {builtin: [read_file]}\nmcp_servers:\n" + entries)


def mcp(folder: Path) -> object:
    return next(check for check in run_doctor(timeout=1) if check.name == "mcp")


def test_trusted_servers_are_started_and_their_tools_counted(workdir: Path) -> None:
    write_project(workdir, ("fx", [str(FIXTURE)]), ("gone", [str(workdir / "no_such_server.py")]))
    untrusted = mcp(workdir)
    assert (untrusted.status, untrusted.message) == (
        WARN, "fx, gone not started: this agent.yaml is not trusted yet (`nami trust`)")
    remember(trust_state(load_settings(ProjectRequest(env=os.environ, cwd=workdir))))
    checked = mcp(workdir)
    assert checked.status == WARN and checked.message == "fx (7 tools), gone (0 tools)"
    assert len(checked.details) == 1 and checked.details[0].startswith("MCP server gone")


def test_no_server_that_gives_a_tool_fails(workdir: Path) -> None:
    write_project(workdir, ("gone", [str(workdir / "no_such_server.py")]))
    remember(trust_state(load_settings(ProjectRequest(env=os.environ, cwd=workdir))))
    checked = mcp(workdir)
    assert checked.status == FAIL and checked.message == "gone (0 tools)"


def test_a_project_without_servers_has_no_mcp_line(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {builtin: [read_file]}\n")
    assert "mcp" not in {check.name for check in run_doctor(timeout=1)}
