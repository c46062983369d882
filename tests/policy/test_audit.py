"""The audit log: a line for every call (allowed, denied, failed, invalid), secrets redacted, whole lines from
concurrent processes, and a log that cannot be written stops tools instead of losing records."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.agent.hooks import Decision
from nami_yaml.app.agent import Agent
from nami_yaml.policy.audit import AuditError, default_audit_path
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.helpers import without_sandbox_notice

DEPLOY = """\
tools:
  - name: deploy
    description: Deploy a service.
    risk: exec
    parameters:
      type: object
      properties:
        service: {type: string}
        api_token: {type: string}
      required: [service, api_token]
    env: {DB_PASSWORD: "pg:${DB_PASSWORD}"}
    env_passthrough: [DB_PASSWORD]
    command: [PYTHON, -c, "import sys; print('deployed', sys.argv[1])", "{service}", "--token={api_token}"]
  - name: broken
    description: Always fails.
    risk: read
    command: [PYTHON, -c, "import sys; sys.exit(3)"]
"""


@pytest.fixture
def project(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DB_PASSWORD", "hunter2-db-secret")
    (workdir / "tools").mkdir()
    (workdir / "tools" / "deploy.yaml").write_text(DEPLOY.replace("PYTHON", sys.executable))
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [read_file], files: [tools/]}\n"
        "rules:\n  - tool: deploy\n    args: {service: payments}\n    decision: deny\n    reason: change freeze\n")
    return workdir


def read_lines(path: Path | None = None) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path or default_audit_path()).read_text().splitlines()]


def test_allowed_denied_failed_and_invalid_calls_each_get_a_line(project: Path) -> None:
    model = ScriptedModel([
        tool_calls(call("deploy", {"service": "web", "api_token": "tok-abcdef-123"}),
                   call("deploy", {"service": "payments", "api_token": "tok-abcdef-123"}),
                   call("broken", {}),
                   call("deploy", {"service": 5})),
        text("done"),
    ])
    agent = Agent.from_config(client=model, trust=True, approve=lambda request: True)
    agent.run("deploy")
    # Lines come in the order calls end: a parallel read may finish after a later call's refusal.
    web, payments, broken, invalid = sorted(read_lines(), key=lambda line: line["call_id"])
    assert {line["session"] for line in (web, payments, broken, invalid)} == {agent.session_id}
    assert web["status"] == "ran" and web["decision"] == "allow" and web["decided_by"] == "user"
    assert web["ok"] is True and web["exit_code"] == 0 and web["duration"] >= 0
    seen = model.requests[1]["messages"][-4]["content"].encode()  # the result the model got
    assert seen == b"deployed web"
    assert web["output_bytes"] == len(seen) and web["output_sha256"] == hashlib.sha256(seen).hexdigest()
    assert web["plan"]["argv"][-2:] == ["web", "--token=[redacted]"] and web["plan"]["cwd"] == str(project)
    assert web["arguments"] == {"service": "web", "api_token": "[redacted]"}
    assert web["plan"]["env_set"] == {"DB_PASSWORD": "[redacted]"}  # PAGER=cat and co. are in every line: left out
    assert payments["status"] == "denied" and payments["decided_by"] == "rule agent.yaml:3:5"
    assert payments["reason"] == "change freeze" and payments["started"] is None
    assert broken["status"] == "ran" and broken["ok"] is False and broken["exit_code"] == 3
    assert broken["decision"] == "allow" and broken["decided_by"] is None  # a read runs as reads do
    assert invalid["status"] == "invalid" and invalid["decision"] is None and "arguments" not in invalid
    assert invalid["raw_arguments"]["bytes"] == len('{"service": 5}')
    everything = default_audit_path().read_text()
    assert "tok-abcdef-123" not in everything and "hunter2-db-secret" not in everything
    assert web["workspace"] == str(project) and web["config"] == str(project / "agent.yaml") and web["via"] == "api"
    assert web["config_trust"] == "trusted"  # found by walking up, run once trusted
    assert oct(default_audit_path().stat().st_mode & 0o777) == "0o600"


def test_tools_call_writes_a_line_and_honours_the_rules(project: Path) -> None:
    subprocess.run(["nami", "trust", "--yes"], cwd=project, check=True, capture_output=True)
    ran = subprocess.run(["nami", "tools", "call", "deploy", "service=web", "api_token=tok-abcdef-123"],
                         cwd=project, capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "deployed web\n")
    refused = subprocess.run(["nami", "tools", "call", "deploy", "service=payments", "api_token=x"],
                             cwd=project, capture_output=True, text=True)
    assert refused.returncode == 1
    assert refused.stdout == ""  # a refusal is nami's message, on stderr
    assert without_sandbox_notice(refused.stderr).startswith("Error: denied by rule agent.yaml:3:5: ") and "change freeze" in refused.stderr
    web, payments = read_lines()
    assert (web["via"], web["status"], web["decided_by"]) == ("tools call", "ran", "tools call (by hand)")
    assert web["config_trust"] == "trusted"
    assert (payments["status"], payments["decided_by"]) == ("denied", "rule agent.yaml:3:5")
    assert web["session"] != payments["session"]


@pytest.mark.parametrize("where", ["below-a-file", "a-folder", "/dev/full"])
def test_a_log_that_cannot_be_written_stops_everything_before_it_starts(project: Path, where: str) -> None:
    (project / "plain").write_text("x")
    (project / "a-folder").mkdir()
    path = {"below-a-file": "plain/audit.jsonl", "a-folder": "a-folder", "/dev/full": "/dev/full"}[where]
    with (project / "agent.yaml").open("a") as handle:
        handle.write(f"audit: {{path: {path}}}\n")
    model = ScriptedModel([tool_calls(call("deploy", {"service": "web", "api_token": "t"})), text("done")])
    with pytest.raises(AuditError, match="cannot be written: .*Nothing was run"):
        Agent.from_config(client=model, trust=True, approve=lambda request: True)
    assert model.requests == []
    result = subprocess.run(["nami", "run", "--yes", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                             "--config", "agent.yaml", "deploy"], cwd=project, capture_output=True, text=True)
    assert result.returncode == 1 and "the audit log" in result.stderr and "cannot be written" in result.stderr
    assert "Traceback" not in result.stderr


FULL_DISK = """
import resource, sys
from pathlib import Path
from nami_yaml.app.agent import Agent
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import ScriptedModel, call, text, tool_calls

log = default_audit_path()
log.parent.mkdir(parents=True, exist_ok=True)
log.write_text("")
# The log may grow by 300 bytes more: a line is longer, so its write fails part-way (EFBIG).
resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
model = ScriptedModel([tool_calls(call("deploy", {"service": "web", "api_token": "t"})),
                       tool_calls(call("deploy", {"service": "api", "api_token": "t"})), text("done")])
errors = []
agent = Agent.from_config(client=model, trust=True, approve=lambda request: True,
                          on_event=lambda e: errors.append(e.message) if e.type == "error" else None)
outcome = agent.run("deploy twice")
print(model.requests[1]["messages"][-1]["content"])
print(model.requests[2]["messages"][-1]["content"])
print(errors)
"""


def test_a_failing_write_stops_further_tools_and_says_so(project: Path) -> None:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(FULL_DISK)], cwd=project, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    first, second, errors = result.stdout.splitlines()
    assert first == "deployed web"  # it ran; its record is what failed
    assert second.startswith("Denied by audit log: ") and "File too large" in second
    assert "no further tool will run" in errors
    # The cut-short line stays alone on its line: the next process's lines parse.
    Agent.from_config(client=ScriptedModel([tool_calls(call("broken", {})), text("ok")]), trust=True).run("x")
    lines = default_audit_path().read_text().splitlines()
    assert len(lines) == 2
    with pytest.raises(ValueError):
        json.loads(lines[0])
    assert json.loads(lines[1])["tool"] == "broken"


def test_audit_path_moves_the_log_relative_to_the_config(project: Path, temp_home: Path) -> None:
    (temp_home / "team").mkdir()
    (project / "agent.yaml").write_text("tools: {builtin: [read_file]}\naudit: {path: ../home/team/audit.jsonl}\n")
    (project / "a.txt").write_text("a\n")
    Agent.from_config(client=ScriptedModel([tool_calls(call("read_file", {"path": "a.txt"})), text("ok")]),
                      trust=True).run("read")
    assert not default_audit_path().exists()
    [line] = read_lines(temp_home / "team" / "audit.jsonl")
    assert line["tool"] == "read_file"


def test_a_dry_run_writes_no_line(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("broken", {})), text("ok")])
    Agent.from_config(client=model, trust=True, dry_run=True).run("x")
    assert not default_audit_path().exists()


WRITER_COUNT, CALLS, SIZE = 2, 20, 70_000


def test_two_concurrent_nami_processes_never_break_a_line(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("model: {provider: custom, name: fake-model}\n"
                                        "tools: {builtin: [write_file]}\n")
    servers = []
    for writer in range(WRITER_COUNT):
        calls = [call("write_file", {"path": f"w{writer}/f{n}.txt", "content": chr(65 + writer) * SIZE})
                 for n in range(CALLS)]
        servers.append(FakeOpenAIServer([tool_calls(*calls), text("written")]).start())
    try:
        processes = [subprocess.Popen([sys.executable, "-m", "nami_yaml", "run", "--yes", "--config", "agent.yaml",
                                       "write"], cwd=workdir, env={**os.environ, "NAMI_BASE_URL": server.base_url},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for server in servers]
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
    finally:
        for server in servers:
            server.close()
    lines = default_audit_path().read_text().splitlines()
    assert len(lines) == WRITER_COUNT * CALLS
    records = [json.loads(line) for line in lines]  # a broken or interleaved line would not parse
    for record in records:
        content = record["arguments"]["content"]
        assert len(content) == SIZE and len(set(content)) == 1
        assert record["status"] == "ran" and record["decided_by"] == "--yes"
        assert (record["via"], record["config_trust"]) == ("run", "named by --config")
    assert len({r["session"] for r in records}) == WRITER_COUNT
    # Each line's prev was read under the lock: the two processes extended one chain.
    assert [r["prev"] for r in records] == ["start"] + [r["hash"] for r in records[:-1]]


def test_an_api_user_can_give_the_session_id(project: Path) -> None:
    agent = Agent.from_config(client=ScriptedModel([tool_calls(call("broken", {})), text("ok")]), trust=True)
    agent.session_id = "session-from-elsewhere"
    agent.run("x")
    assert read_lines()[0]["session"] == "session-from-elsewhere"
    assert agent.guard.audit is not None and agent.guard.audit.context.session == "session-from-elsewhere"


def test_the_model_learns_which_rule_denied_it(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("deploy", {"service": "payments", "api_token": "t"})), text("ok")])
    events: list[Any] = []
    Agent.from_config(client=model, trust=True, approve=lambda r: Decision.allow(), on_event=events.append).run("x")
    refusal = model.requests[1]["messages"][-1]["content"]
    assert refusal.startswith("Denied by rule agent.yaml:3:5: ") and " payments --token=t. " in refusal
    assert refusal.endswith(". Reason: change freeze. Do not retry the same call; ask the user or try another way.")
    [approval] = [e for e in events if e.type == "approval"]
    assert (approval.approved, approval.source, approval.reason) == (False, "rule agent.yaml:3:5", "change freeze")


def test_a_lone_surrogate_in_the_arguments_is_recorded_and_the_run_goes_on(project: Path) -> None:
    """JSON from the model may hold a lone surrogate ("\\ud800"): read_file ran, then writing its line
    raised UnicodeEncodeError, so the run crashed with a traceback and the call that ran had no line."""
    (project / "notes.txt").write_text("hello\n")
    odd = "notes.txt\ud800"
    raw = '{"path": "notes.txt\\ud800"}'
    model = ScriptedModel([tool_calls(call("read_file", raw), call("read_file", {"path": "notes.txt"}),
                                      call("read_file", {"path": "notes.txt\udcff\u009b31m\u2028x"})),
                           text("done")])
    outcome = Agent.from_config(client=model, trust=True).run("read")
    assert outcome.status == "answered", outcome.error
    data = default_audit_path().read_bytes()
    data.decode("utf-8")  # valid UTF-8: a lone surrogate is written as its JSON escape
    lines = [json.loads(line) for line in data.split(b"\n") if line]
    assert len(lines) == 3
    assert sorted(line["arguments"]["path"] for line in lines) == sorted(
        ["notes.txt", odd, "notes.txt\udcff\u009b31m\u2028x"])
    # Nothing invisible or terminal-controlling is written raw: `nami log --json` prints lines as written.
    assert "\u009b" not in data.decode() and "\u2028" not in data.decode()


SCRIPTED = """\
tools:
  - name: release
    description: Release with a token.
    risk: read
    parameters:
      type: object
      properties:
        api_token: {type: string}
        options: {type: object, properties: {password: {type: string}}}
      required: [api_token]
    script: echo released
  - name: migrate
    description: Migrate the database.
    risk: read
    env: {DB_URL: "postgres://app:${DB_PASSWORD}@db/app", DB_HINT: "pw=${DB_PASSWORD}"}
    env_passthrough: [DB_PASSWORD]
    command: [PYTHON, -c, "print('migrated')"]
"""


def test_secrets_are_redacted_in_every_spelling(project: Path) -> None:
    """A script's $NAMI_ARGS holds the arguments as JSON, where a token with a quote or a backslash is
    spelled with escapes the plain text search missed; and a passed-through secret expanded into a
    variable with an innocent name (DB_URL) went into the log as it was."""
    (project / "tools" / "more.yaml").write_text(SCRIPTED.replace("PYTHON", sys.executable))
    token = 'tok"en\\é-4242'
    model = ScriptedModel([tool_calls(call("release", {"api_token": token, "options": {"password": "pw\"12345"}}),
                                      call("migrate", {})), text("done")])
    Agent.from_config(client=model, trust=True).run("release")
    data = default_audit_path().read_text()
    for spelling in (token, json.dumps(token)[1:-1], json.dumps(token, ensure_ascii=False)[1:-1],
                     "4242", "12345", "hunter2-db-secret"):
        assert spelling not in data, spelling
    release, migrate = sorted(read_lines(), key=lambda line: line["tool"], reverse=True)
    assert json.loads(release["plan"]["env_set"]["NAMI_ARGS"])["api_token"] == "[redacted]"
    assert migrate["plan"]["env_set"]["DB_URL"] == "[redacted]"  # a URL with a password
    assert migrate["plan"]["env_set"]["DB_HINT"] == "pw=[redacted]"


def test_a_short_secret_looking_value_is_redacted_only_as_a_whole_value(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray sets RAY_AUTH_MODE=token in the process that uses it: "--token=x" must not become
    "--[redacted]=x" in every line of a batch run on Ray."""
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    model = ScriptedModel([tool_calls(call("deploy", {"service": "web", "api_token": "tok-abcdef-123"})), text("ok")])
    Agent.from_config(client=model, trust=True, approve=lambda request: True).run("deploy")
    [web] = read_lines()
    assert web["plan"]["argv"][-2:] == ["web", "--token=[redacted]"]


def test_the_environment_is_scanned_for_secrets_once_per_log(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scanning every variable at every call cost more than the rest of a line: once per log (a run's)."""
    from nami_yaml.policy import audit

    (project / "tools" / "more.yaml").write_text(SCRIPTED.replace("PYTHON", sys.executable))
    scans: list[int] = []
    real = audit.host_secrets
    monkeypatch.setattr(audit, "host_secrets", lambda: scans.append(1) or real())
    model = ScriptedModel([tool_calls(call("migrate", {}), call("broken", {})), tool_calls(call("migrate", {})),
                           text("ok")])
    Agent.from_config(client=model, trust=True).run("migrate twice")
    lines = read_lines()
    assert len(lines) == 3 and len(scans) == 1
    # What the one scan found is redacted in every line: $DB_PASSWORD expanded into an innocent name.
    assert [line["plan"]["env_set"]["DB_HINT"] for line in lines if line["tool"] == "migrate"] == ["pw=[redacted]"] * 2


def test_each_result_event_carries_its_calls_audit_record_hash(project: Path) -> None:
    from nami_yaml.agent.events import ToolResultEvent

    events: list[Any] = []
    model = ScriptedModel([tool_calls(call("broken", {}), call("deploy", {"service": "payments", "api_token": "t"})),
                           text("done")])
    Agent.from_config(client=model, trust=True, on_event=events.append).run("go")
    hashes = {line["call_id"]: line["hash"] for line in read_lines()}
    results = [event for event in events if isinstance(event, ToolResultEvent)]
    assert len(results) == 2 and {e.id: e.details["audit_record"] for e in results} == hashes
