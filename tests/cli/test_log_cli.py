"""``nami log``: the audit log readable, filtered by tool, session, decision and time; --json as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml import Agent, Decision
from nami_yaml.cli.main import cli
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.helpers import nami


@pytest.fixture
def log(workdir: Path) -> list[str]:
    """Two sessions: a bash call allowed and one denied by a rule, then a read and an approved write."""
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, read_file, write_file]}\n"
        "rules:\n  - tool: bash\n    command: [echo]\n    decision: allow\n"
        "  - tool: bash\n    command: rm\n    decision: deny\n    reason: use the trash\n")
    (workdir / "a.txt").write_text("a\n")
    first = Agent.from_config(client=ScriptedModel([
        tool_calls(call("bash", {"command": "echo hi"}), call("bash", {"command": "rm -rf a.txt"})), text("ok")]),
        trust=True)
    first.session_id = "20250101-000000-first"
    first.run("x")
    second = Agent.from_config(client=ScriptedModel([
        tool_calls(call("read_file", {"path": "a.txt"})),
        tool_calls(call("write_file", {"path": "b.txt", "content": "b"})), text("ok")]),
        trust=True, approve=lambda r: Decision.allow(source="user"))
    second.session_id = "20250101-000000-second"
    second.run("y")
    return default_audit_path().read_text().splitlines()


def test_readable_lines_grouped_by_session(log: list[str], workdir: Path) -> None:
    result = nami("log")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("── session 20250101-000000-first (api, ")
    assert lines[0].endswith(f", {workdir})")
    assert " ran      bash  bash command=\"echo hi\"  → exit 0, " in lines[1] and lines[1].endswith("by rule agent.yaml:3:5")
    assert " denied   bash  bash command=\"rm -rf a.txt\"  by rule agent.yaml:6:5  (use the trash)" in lines[2]
    assert lines[3].startswith("── session 20250101-000000-second")
    assert " ran      read_file  read_file path=\"a.txt\" offset=1 limit=2000  → ok, " in lines[4]
    assert lines[5].endswith("by user") and "write_file" in lines[5]
    assert len(lines) == 6


def test_filters(log: list[str]) -> None:
    def tools(*args: str) -> list[str]:
        return [json.loads(line)["tool"] for line in nami("log", "--json", *args).stdout.splitlines()]

    assert tools("--tool", "bash") == ["bash", "bash"]
    assert tools("--tool", "*_file") == ["read_file", "write_file"]
    assert tools("--session", "20250101-000000-sec") == ["read_file", "write_file"]
    assert tools("--decision", "deny") == ["bash"]
    assert tools("--decision", "allow", "--session", "20250101-000000-first") == ["bash"]
    assert tools("--by", "user") == ["write_file"]
    assert tools("--by", "agent.yaml:6") == ["bash"]
    assert tools("--since", "1h") == ["bash", "bash", "read_file", "write_file"]
    assert tools("--until", "2000-01-01") == []
    assert tools("--last", "1") == ["write_file"]


def test_time_filters_use_the_time_of_each_line(log: list[str]) -> None:
    old = json.loads(log[0])
    old["time"] = "2020-06-01T12:00:00.000Z"
    with default_audit_path().open("a") as handle:
        handle.write(json.dumps(old) + "\n")

    def count(*args: str) -> int:
        return len(nami("log", "--json", *args).stdout.splitlines())

    assert count("--since", "2020-05-31", "--until", "2020-06-02") == 1
    assert count("--since", "2020-06-01T12:00:01Z") == 4
    assert count("--until", "2020-06-01T11:59:59+00:00") == 0


def test_json_passes_lines_through(log: list[str]) -> None:
    assert nami("log", "--json").stdout.splitlines() == log


def test_a_broken_line_is_skipped_and_reported(log: list[str]) -> None:
    with default_audit_path().open("a") as handle:
        handle.write('{"time": "2025-01-01T00:00:00Z", "tool": "cut sh\n')
    result = CliRunner().invoke(cli, ["log", "--json"])
    assert result.stdout.splitlines() == log
    assert f"nami: skipped 1 line that is not JSON (line 5 of {default_audit_path()})" in result.stderr


def test_bad_time_and_missing_log(workdir: Path) -> None:
    result = nami("log")
    assert result.exit_code == 0 and "no audit log at" in result.stderr
    bad = CliRunner().invoke(cli, ["log", "--since", "yesterday"])
    assert bad.exit_code == 2 and "'yesterday' is not a time" in bad.stderr
    missing = CliRunner().invoke(cli, ["log", "--path", str(workdir / "nope.jsonl")])
    assert missing.exit_code == 2


def test_json_output_of_a_line_written_by_someone_else_is_terminal_safe(log: list[str]) -> None:
    """The log is writable by the user (and by the model's bash, or a team sharing it): a valid JSON line
    may hold raw C1 controls (U+009B starts a terminal command) or a bidi override, which --json printed
    as they were. They are escaped as JSON escapes: the same JSON to a parser."""
    forged = json.loads(log[0])
    forged["tool"] = "bash\u009b2J\u202e"
    forged["arguments"] = {"command": "ls\u2028\U000e0041"}
    with default_audit_path().open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(forged, ensure_ascii=False) + "\n")
    out = nami("log", "--json", "--last", "1").stdout
    assert "\u009b" not in out and "\u202e" not in out and "\u2028" not in out and "\U000e0041" not in out
    assert json.loads(out) == forged


def test_it_shows_this_workspace_unless_asked_for_another_or_all(log: list[str], workdir: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "agent.yaml").write_text("tools: {builtin: [list_dir]}\n")
    monkeypatch.chdir(other)
    elsewhere = Agent.from_config(client=ScriptedModel([tool_calls(call("list_dir", {})), text("ok")]), trust=True)
    elsewhere.session_id = "20250101-000000-other"
    elsewhere.run("z")

    def tools(*args: str) -> list[str]:
        return [json.loads(line)["tool"] for line in nami("log", "--json", *args).stdout.splitlines()]

    assert tools() == ["list_dir"]  # in the other project: its own call only
    result = CliRunner().invoke(cli, ["log"])
    assert f"nami: 4 more calls in other workspaces than {other} (--all shows them)" in result.stderr
    assert tools("--all") == ["bash", "bash", "read_file", "write_file", "list_dir"]
    assert tools("--workspace", str(workdir)) == ["bash", "bash", "read_file", "write_file"]
    assert tools("--session", "20250101-000000-first") == ["bash", "bash"]  # a session names its workspace
    monkeypatch.chdir(workdir / ".")
    assert tools() == ["bash", "bash", "read_file", "write_file"]
    assert CliRunner().invoke(cli, ["log", "--all", "-w", "x"]).exit_code == 2
