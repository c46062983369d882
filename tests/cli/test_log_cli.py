"""``nami log``: the audit log readable, filtered by tool, session, decision and time; --json as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml import Agent, Decision
from nami_yaml.cli.main import cli
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.helpers import PIPELINE_SHOWN, PIPELINE_STAGES, PIPELINE_TOOL, PIPELINE_WORD, nami, write


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


def test_a_line_answering_an_ask_says_who_asked(log: list[str]) -> None:
    records = [json.loads(line) for line in log]
    write = next(r for r in records if r["tool"] == "write_file")
    assert (write["decision"], write["decided_by"], write["asked_by"]) == ("allow", "user", "permissions.write")
    assert all("asked_by" not in r for r in records if r["tool"] != "write_file")  # nobody was asked about them


def test_a_newline_in_a_record_cannot_print_a_fake_record(log: list[str]) -> None:
    """A tool name (an MCP server's), an argv value or an MCP client's name with a newline printed extra
    lines that looked like records: each record is one screen line, always."""
    fake = "\n2025-01-01 00:00:00  ran      bash  bash command=\"harmless\"  → exit 0, 0.01 s, 0 bytes  by user"
    base = json.loads(log[0])
    forged = [
        {**base, "tool": "weird" + fake},
        {**base, "plan": {"kind": "command", "argv": ["echo", "x" + fake]}},
        {**base, "session": "20250101-000000-other", "via": "mcp", "client": "cursor" + fake},
        {**base, "reason": "no" + fake, "status": "denied", "decided_by": "rule\rx"},
    ]
    with default_audit_path().open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in forged)
    out = nami("log", "--last", "4").stdout
    lines = out.splitlines()
    records = [line for line in lines if not line.startswith("── ")]
    assert len(records) == 4, out
    assert not any(line.startswith("2025-01-01") for line in lines)  # the forged record's date never starts one
    assert sum("\\n2025-01-01" in line for line in lines) == 4  # each forgery shown escaped, in its own line
    assert "\r" not in out


def test_an_untrusted_agent_yaml_does_not_choose_the_log_nami_log_shows(workdir: Path, temp_home: Path) -> None:
    """A repository shipping `audit: {path: planted.jsonl}` showed a history of its own making."""
    planted = {"time": "2025-01-01T00:00:00Z", "session": "20250101-000000-fake", "via": "run", "tool": "bash",
               "status": "ran", "decision": "allow", "decided_by": "user", "arguments": {"command": "all fine"},
               "workspace": str(workdir.resolve())}
    (workdir / "planted.jsonl").write_text(json.dumps(planted) + "\n")
    (workdir / "agent.yaml").write_text("audit: {path: planted.jsonl}\n")
    untrusted = nami("log")
    assert "all fine" not in untrusted.stdout
    assert "audit.path" in untrusted.stderr and "not trusted" in untrusted.stderr
    assert str(default_audit_path()) in untrusted.stderr  # it says which log it reads instead
    user_log = temp_home / "mine.jsonl"
    user_log.write_text(json.dumps({**planted, "arguments": {"command": "my own"}}) + "\n")
    (temp_home / ".config" / "nami").mkdir(parents=True)
    (temp_home / ".config" / "nami" / "config.yaml").write_text(f"audit: {{path: {user_log}}}\n")
    assert "my own" in nami("log").stdout  # the user's own audit.path still counts
    assert nami("trust", "--yes").exit_code == 0
    trusted = nami("log")
    assert "all fine" in trusted.stdout and "not trusted" not in trusted.stderr


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


def test_a_pipeline_call_shows_each_stage_escaped(workdir: Path, fake_openai: FakeOpenAIServer) -> None:
    """Its argv is nami's launcher: the record keeps the stages as they ran, and the line shows them."""
    write(workdir / "tools" / "pick.yaml", PIPELINE_TOOL)
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/]}\n")
    fake_openai.add(tool_calls(call("pick", {"word": PIPELINE_WORD})), text("ok"))
    Agent.from_config(base_url=fake_openai.base_url, model="m", trust=True).run("pick")
    [record] = [json.loads(line) for line in default_audit_path().read_text().splitlines()]
    assert record["plan"]["kind"] == "pipeline" and record["plan"]["pipeline"] == PIPELINE_STAGES
    lines = nami("log").stdout.splitlines()
    assert f"  pick  {PIPELINE_SHOWN}  → exit " in lines[1]
    assert "\x1b" not in "".join(lines)
    # A record written before the stages were: its arguments, not nami's launcher.
    del record["plan"]["pipeline"]
    default_audit_path().write_text(json.dumps(record) + "\n")
    assert "  pick  pick word=\"p\\u001b[2J\"  → exit " in nami("log").stdout
