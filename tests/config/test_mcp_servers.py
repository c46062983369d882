"""agent.yaml ``mcp_servers:`` without the SDK and without starting anything: ``nami check`` reports what is
wrong as file:line:col, warns about unset variables and secrets written in the file; settings layering; what
the trust summary says and covers; rules that name a server's tools."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.app.protected import MCP_SERVER, protected_paths
from nami_yaml.app.toolset import build_registry
from nami_yaml.app.trust_summary import summary
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.settings import load_settings
from nami_yaml.config.trust import trust_state
from nami_yaml.project_request import ProjectRequest
from nami_yaml.sensitive_paths import sensitive_reason
from tests.helpers import nami, write


def test_check_validates_entries_without_starting_them(workdir: Path) -> None:
    started = workdir / "started"
    write(workdir / "server.sh", f"#!/bin/sh\ntouch {started}\n").chmod(0o755)
    agent = write(workdir / "agent.yaml", "tools: {builtin: []}\nmcp_servers:\n"
                                          "  local: {command: ./server.sh, args: [--verbose], startup_timeout: 5}\n"
                                          "  remote: {url: 'https://mcp.example.com/mcp', tool_timeout: 30}\n")
    result = nami("check")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"ok: {agent}; 0 tools (none) from 0 tool files; 2 MCP servers (checked, not started)\n"
    assert not started.exists()


def test_check_reports_bad_entries_with_their_positions(workdir: Path) -> None:
    write(workdir / "agent.yaml", "mcp_servers:\n"
                                  "  both: {command: x, url: 'http://h/mcp'}\n"
                                  "  neither: {args: [a]}\n"
                                  "  web: {url: 'http://h/mcp', env: {A: b}}\n"
                                  "  cli: {command: x, headers: {A: b}}\n"
                                  "  a__b: {command: x}\n"
                                  "  refs: {command: x, env: {T: '${not a name}'}}\n"
                                  "  off: {enabled: false}\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:-1] == [
        "agent.yaml:2:3: $.mcp_servers.both: give either command (a stdio server) or url (an HTTP server), not both",
        "agent.yaml:3:3: $.mcp_servers.neither: give command (a stdio server) or url (an HTTP server)",
        "agent.yaml:4:30: $.mcp_servers.web.env: env is for stdio servers (with command), not with url",
        "agent.yaml:5:21: $.mcp_servers.cli.headers: headers is for HTTP servers (with url), not with command",
        "agent.yaml:6:3: $.mcp_servers.a__b: the server name 'a__b' must not contain '__': it separates the "
        "server from the tool in tool names",
        "agent.yaml:7:31: $.mcp_servers.refs.env.T: write a host variable as ${NAME}, e.g. ${TOKEN}; "
        "found '${not a name}'",
    ]


def test_check_catches_schema_mistakes(workdir: Path) -> None:
    write(workdir / "agent.yaml", "mcp_servers:\n  gh:\n    command: npx\n    startup_timout: 5\n"
                                  "  'bad name': {command: x}\n")
    result = nami("check")
    assert result.exit_code == 1
    assert "agent.yaml:4:5: $.mcp_servers.gh.startup_timout: unknown key 'startup_timout'; " \
           "did you mean 'startup_timeout'?" in result.stderr
    assert 'agent.yaml:2:3: $.mcp_servers: "bad name" must be 1 to 40 letters, digits, _ or - (an MCP server\'s ' \
           "name)" in result.stderr


def test_check_warns_about_unset_variables_and_written_secrets(workdir: Path) -> None:
    write(workdir / "agent.yaml", "mcp_servers:\n"
                                  "  gh:\n    command: x\n    env: {GITHUB_TOKEN: '${NAMI_TEST_UNSET}', API_KEY: abc123}\n"
                                  "  docs:\n    url: 'https://d/mcp'\n    headers: {Authorization: Bearer abc123}\n"
                                  "  model:\n    command: x\n    env: {K: '${OPENAI_API_KEY}'}\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "agent.yaml:4:25: $.mcp_servers.gh.env.GITHUB_TOKEN: warning: ${NAMI_TEST_UNSET} is not set here: the "
        "server will not start",
        "agent.yaml:4:56: $.mcp_servers.gh.env.API_KEY: warning: API_KEY looks like a secret written into the file; "
        "take it from the host with ${NAME} instead",
        "agent.yaml:7:30: $.mcp_servers.docs.headers.Authorization: warning: Authorization looks like a secret "
        "written into the file; take it from the host with ${NAME} instead",
        "agent.yaml:10:14: $.mcp_servers.model.env.K: ${OPENAI_API_KEY} holds a model API key, which no tool or "
        "server is given",
        "1 problem and 3 warnings found",
    ]


def test_a_server_named_in_both_files_is_the_projects_whole(temp_home: Path, workdir: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml",
          "mcp_servers:\n  gh: {command: npx, env: {A: b}, startup_timeout: 9}\n  mine: {command: mine}\n")
    write(workdir / "agent.yaml", "mcp_servers:\n  gh: {url: 'https://gh/mcp'}\n  mine: {enabled: false}\n")
    effective = load_settings(ProjectRequest(env={"HOME": str(temp_home), "XDG_CONFIG_HOME": str(temp_home / ".config")},
                              cwd=workdir))
    specs = server_specs(effective)
    assert [(s.name, s.url, s.command, dict(s.env), s.startup_timeout, s.where, s.in_project) for s in specs] == [
        ("gh", "https://gh/mcp", None, {}, 30.0, "agent.yaml:2:3", True)]


def test_the_trust_summary_lists_the_servers_a_project_starts(workdir: Path) -> None:
    write(workdir / "servers" / "db.py", "print('a server')\n")
    write(workdir / "agent.yaml", "mcp_servers:\n"
                                  "  db:\n    command: python3\n    args: [servers/db.py]\n"
                                  "    env: {DB_PASSWORD: '${DB_PASSWORD}'}\n"
                                  "  docs:\n    url: 'https://docs/mcp'\n    headers: {Authorization: 'Bearer ${DOCS_TOKEN}'}\n")
    effective = load_settings(ProjectRequest(env={}, cwd=workdir, user_config=False))
    lines = summary(effective, build_registry(effective))
    at = lines.index("  starts 2 MCP servers (their tools join the agent's):")
    assert lines[at + 1:at + 6] == [
        "    db (stdio) from agent.yaml:2:3: python3 servers/db.py",
        "      receives the host's DB_PASSWORD",
        "      its code (trust covers it): servers/",
        "    docs (HTTP) from agent.yaml:6:3: https://docs/mcp",
        "      receives the host's DOCS_TOKEN",
    ]
    before = trust_state(effective)
    assert workdir / "servers" / "db.py" in before.files  # the server's code is what runs: trust covers it
    write(workdir / "servers" / "helper.py", "X = 1\n")  # and its folder
    assert trust_state(effective, fresh=True).digest != before.digest


def test_writing_a_servers_code_needs_exec_approval(workdir: Path) -> None:
    write(workdir / "servers" / "db.py", "print('a server')\n")
    write(workdir / "agent.yaml", "mcp_servers:\n  db: {command: python3, args: [servers/db.py]}\n")
    protected = protected_paths(load_settings(ProjectRequest(env={}, cwd=workdir, user_config=False)))
    assert sensitive_reason(workdir / "servers" / "db.py", protected) == MCP_SERVER
    assert sensitive_reason(workdir / "servers" / "helper.py", protected) == MCP_SERVER
    assert sensitive_reason(workdir / "notes.txt", protected) is None


def test_rules_may_name_a_servers_tools_before_it_runs(workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [bash]}\nmcp_servers:\n  gh: {command: x}\n"
                                  "rules:\n  - {tool: 'gh__*', decision: ask}\n  - {tool: gh__delete_repo, decision: deny}\n"
                                  "  - {tool: gx__typo, decision: deny}\n")
    result = nami("check")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0].startswith("agent.yaml:7:12: $.rules[2].tool: no tool is named 'gx__typo'")
    assert len(result.stderr.splitlines()) == 2
