"""agent.yaml's hooks: (app/hooks.py, runners/hooks.py), with real hook processes in the real bwrap and the
model over HTTP: Claude Code's scripts work unchanged, a hook's opinion joins the one decision path (it can
deny or ask, never loosen), a hook that decides fails closed, and hooks are project code trust covers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.agent.events import Event, NoticeEvent
from nami_yaml.app.agent import Agent
from nami_yaml.app.policy_check import Decider, open_for_deciding
from nami_yaml.config.settings import load_settings
from nami_yaml.config.trust import trust_state
from nami_yaml.project_request import ProjectRequest
from nami_yaml.spec.validate import validator
from nami_yaml.testing import FakeOpenAIServer, ScriptedModel, call, text, tool_calls
from tests.helpers import Answering, nami, run_nami
from tests.programs import need, need_bwrap

# Claude Code's example of a PreToolUse hook for Bash, as people have it in .claude/hooks/.
CLAUDE_CODE_GUARD = """#!/bin/bash
command=$(jq -r '.tool_input.command')
if echo "$command" | grep -q 'rm -rf'; then
  echo "Blocked: rm -rf is not allowed here" >&2
  exit 2
fi
exit 0
"""


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def project(workdir: Path, hooks: str, *, extra: str = "") -> Path:
    (workdir / "agent.yaml").write_text(f"tools: {{builtin: [bash, write_file]}}\n{extra}hooks:\n{hooks}")
    return workdir


def run(replies: list[Any], **options: Any) -> tuple[FakeOpenAIServer, list[Event], Any]:
    events: list[Event] = []
    with FakeOpenAIServer(replies) as server:
        agent = Agent.from_config(base_url=server.base_url, model="m", trust=True, on_event=events.append, **options)
        outcome = agent.run("go")
    return server, events, outcome


def tool_results(server: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def notices(events: list[Event]) -> str:
    return "\n".join(e.message for e in events if isinstance(e, NoticeEvent))


@pytest.fixture
def sandboxed(workdir: Path, temp_home: Path) -> Path:
    need_bwrap()
    return workdir


def test_a_claude_code_hook_script_blocks_a_bash_call_unchanged(sandboxed: Path) -> None:
    need("jq")
    script(sandboxed / ".claude" / "hooks" / "guard.sh", CLAUDE_CODE_GUARD)
    project(sandboxed, '  PreToolUse:\n    - {matcher: "bash", command: ["${CLAUDE_PROJECT_DIR}/.claude/hooks/guard.sh"]}\n')
    (sandboxed / "victim").mkdir()
    server, _, _ = run([tool_calls(call("bash", {"command": "rm -rf victim"})), text("ok")], assume_yes=True)
    assert "Blocked: rm -rf is not allowed here" in tool_results(server)[0]
    assert (sandboxed / "victim").is_dir()


def test_the_hook_gets_claude_codes_input(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "echo.sh", "#!/bin/sh\ncat >&2\nexit 2\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [./hooks/echo.sh]}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    result = tool_results(server)[0]
    given = json.loads(result[result.index("{"):result.rindex("}") + 1])
    assert given["hook_event_name"] == "PreToolUse" and given["tool_name"] == "bash"
    assert given["tool_input"] == {"command": "echo hi"} and given["cwd"] == str(sandboxed)
    assert given["session_id"]
    assert list(validator("hook-input").iter_errors(given)) == []


def test_a_hooks_allow_does_not_skip_the_question_the_rules_ask(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "allow.sh", "#!/bin/sh\ncat >/dev/null\n"
           "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\"}}'\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [./hooks/allow.sh]}\n")
    person = Answering(True)
    server, events, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], approve=person)
    assert len(person.asked) == 1 and person.asked[0].pending.source == "permissions.exec"
    assert "never loosens" in notices(events)
    assert tool_results(server)[0].strip() == "hi"


def test_a_hook_that_asks_makes_an_allowed_call_ask(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "ask.sh", "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": "
           "{\"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"writes on a Friday\"}}'\n")
    project(sandboxed, "  PreToolUse:\n    - {matcher: write_file, command: [./hooks/ask.sh]}\n",
            extra="permissions: {write: allow}\n")
    person = Answering(False)
    server, _, _ = run([tool_calls(call("write_file", {"path": "a.txt", "content": "x"})), text("ok")],
                       approve=person)
    assert person.asked[0].pending.reason == "writes on a Friday"
    assert not (sandboxed / "a.txt").exists()


def test_a_hanging_hook_times_out_as_a_deny(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "hang.sh", "#!/bin/sh\nsleep 60\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [./hooks/hang.sh], timeout: 0.5}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi > out"})), text("ok")], assume_yes=True)
    assert "timed out" in tool_results(server)[0] and "fails closed" in tool_results(server)[0]
    assert not (sandboxed / "out").exists()


def test_a_hook_that_crashes_denies_and_the_matcher_chooses_the_tools(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "crash.sh", "#!/bin/sh\necho oops >&2\nexit 1\n")
    project(sandboxed, "  PreToolUse:\n    - {matcher: '^write_', command: [./hooks/crash.sh]}\n",
            extra="permissions: {write: allow}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"}),
                                   call("write_file", {"path": "a.txt", "content": "x"})), text("ok")],
                       assume_yes=True)
    results = tool_results(server)
    assert results[0].strip() == "hi"
    assert "exited with 1: oops" in results[1] and not (sandboxed / "a.txt").exists()


def test_a_post_tool_use_block_reaches_the_model_with_the_result(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "post.sh", "#!/bin/sh\njq -r .tool_response.content >/dev/null 2>&1\n"
           "echo '{\"decision\": \"block\", \"reason\": \"the output holds a token: rotate it\"}'\n")
    project(sandboxed, "  PostToolUse:\n    - {command: [./hooks/post.sh]}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    result = tool_results(server)[0]
    assert result.startswith("hi") and "the output holds a token: rotate it" in result


def test_hooks_read_the_workspace_and_write_nothing_there(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "write.sh", "#!/bin/sh\ncat >/dev/null\necho x > \"$NAMI_WORKSPACE/planted\" || exit 1\n")
    project(sandboxed, "  PostToolUse:\n    - {command: [./hooks/write.sh]}\n")
    _, events, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert not (sandboxed / "planted").exists()
    assert "failed" in notices(events) and "the run goes on" in notices(events)


def test_a_user_prompt_hook_adds_context_or_blocks_the_prompt(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "prompt.sh", "#!/bin/sh\nif jq -e '.prompt | test(\"secret\")' >/dev/null; then\n"
           "  echo 'no secrets in prompts' >&2; exit 2\nfi\necho 'The on-call engineer is Ada.'\n")
    project(sandboxed, "  UserPromptSubmit:\n    - {command: [./hooks/prompt.sh]}\n")
    need("jq")
    with FakeOpenAIServer([text("ok")]) as server:
        agent = Agent.from_config(base_url=server.base_url, model="m", trust=True)
        outcome = agent.run("who is on call?")
        assert "The on-call engineer is Ada." in server.requests[0]["messages"][-1]["content"]
        blocked = agent.run("tell me the secret")
        assert len(server.requests) == 1  # nothing was sent
    assert outcome.status == "answered"
    assert blocked.status == "stopped" and "no secrets in prompts" in (blocked.error or "")
    assert all("secret" not in str(m.get("content")) for m in agent.messages)


def test_a_stop_hook_sends_the_model_back_once(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "stop.sh", "#!/bin/sh\nif jq -e .stop_hook_active >/dev/null; then exit 0; fi\n"
           "echo 'run the tests before you finish' >&2; exit 2\n")
    project(sandboxed, "  Stop:\n    - {command: [./hooks/stop.sh]}\n")
    need("jq")
    server, _, outcome = run([text("done"), text("tests pass, done")])
    assert outcome.final_text == "tests pass, done"
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": "run the tests before you finish"}


def test_a_session_start_hook_adds_context_once(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "start.sh", "#!/bin/sh\ncat >/dev/null\necho 'Cluster: staging-eu'\n")
    project(sandboxed, "  SessionStart:\n    - {command: [./hooks/start.sh]}\n")
    with FakeOpenAIServer([text("a"), text("b")]) as server:
        agent = Agent.from_config(base_url=server.base_url, model="m", trust=True)
        agent.run("one")
        agent.run("two")
    assert "Cluster: staging-eu" in server.requests[0]["messages"][-1]["content"]
    assert server.requests[1]["messages"][-1]["content"] == "two"


def test_a_dry_run_runs_pre_tool_use_hooks_only(sandboxed: Path) -> None:
    marker = sandboxed / "hooks" / "ran"
    script(sandboxed / "hooks" / "deny.sh", "#!/bin/sh\necho 'not today' >&2\nexit 2\n")
    script(sandboxed / "hooks" / "post.sh", "#!/bin/sh\necho 'posted' >&2\nexit 2\n")
    project(sandboxed, "  PreToolUse:\n    - {matcher: write_file, command: [./hooks/deny.sh]}\n"
                       "  PostToolUse:\n    - {command: [./hooks/post.sh]}\n")
    server, events, _ = run([tool_calls(call("write_file", {"path": "a", "content": "x"}),
                                        call("bash", {"command": "echo hi"})), text("ok")], dry_run=True)
    results = tool_results(server)
    assert "not today" in results[0] and "posted" not in results[1]
    assert not marker.exists()


def test_a_changed_hook_script_asks_for_trust_again(workdir: Path, temp_home: Path) -> None:
    hook = script(workdir / "hooks" / "guard.sh", "#!/bin/sh\nexit 0\n")
    project(workdir, "  PreToolUse:\n    - {command: [./hooks/guard.sh]}\n")
    settings = load_settings(ProjectRequest(cwd=workdir))
    assert hook.resolve() in trust_state(settings).files
    before = trust_state(settings).digest
    hook.write_text("#!/bin/sh\ncurl evil\n")
    assert trust_state(settings, fresh=True).digest != before


def test_nami_check_reports_hook_mistakes_with_their_positions(workdir: Path, temp_home: Path) -> None:
    (workdir / "agent.yaml").write_text("hooks:\n  PreToolUse:\n    - {matcher: '(', command: [x]}\n"
                                        "  PreToolUse2: []\n  Stop:\n    - {command: []}\n")
    result = nami("check")
    assert result.exit_code != 0
    assert "agent.yaml:3:" in result.output and "$.hooks.PreToolUse[0].matcher: not a regular expression" in result.output
    assert "unknown key 'PreToolUse2'; did you mean 'PreToolUse'?" in result.output
    assert "agent.yaml:4:3:" in result.output and "agent.yaml:6:" in result.output
    assert "Traceback" not in result.output


def test_nami_policy_test_runs_no_hook(workdir: Path, temp_home: Path) -> None:
    marker = workdir / "ran"
    script(workdir / "hooks" / "mark.sh", f"#!/bin/sh\ntouch {marker}\nexit 2\n")
    project(workdir, "  PreToolUse:\n    - {command: [./hooks/mark.sh]}\n")
    decide = Decider(open_for_deciding(cwd=workdir))
    decision = decide("bash", {"command": "echo"})
    assert not isinstance(decision, str) and decision.action == "ask"  # the rules' answer, no hook's
    assert not marker.exists()


def test_the_published_hook_schemas(workdir: Path, temp_home: Path) -> None:
    shown = json.loads(nami("schema", "hook-output").output)
    assert shown["properties"]["hookSpecificOutput"]["properties"]["permissionDecision"]["enum"] == [
        "allow", "deny", "ask"]
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                     "permissionDecisionReason": "no"}}
    assert list(validator("hook-output").iter_errors(answer)) == []
    assert list(validator("hook-output").iter_errors({"decision": "maybe"}))
    assert json.loads(nami("schema", "hook-input").output)["required"] == ["session_id", "cwd", "hook_event_name"]


def test_a_subagent_stop_hook_sends_the_named_agent_back_and_stop_is_the_parents(sandboxed: Path) -> None:
    """A named agent's run: its calls go through the PreToolUse hooks (whose input names the agent), its
    answer through SubagentStop; the parent's through Stop (none here)."""
    need("jq")
    script(sandboxed / "hooks" / "sub.sh", "#!/bin/sh\nif jq -e .stop_hook_active >/dev/null; then exit 0; fi\n"
           "echo 'cite the file you read' >&2; exit 2\n")
    script(sandboxed / "hooks" / "who.sh", "#!/bin/sh\njq -r '\"refused for \" + (.agent // \"the main agent\")' >&2\n"
           "exit 2\n")
    (sandboxed / "agent.yaml").write_text(
        "tools: {builtin: [read_file, bash]}\nagents:\n  reviewer:\n    description: Reviews.\n"
        "    tools: [read_file, bash]\nhooks:\n  SubagentStop:\n    - {command: [./hooks/sub.sh]}\n"
        "  PreToolUse:\n    - {matcher: '^bash$', command: [./hooks/who.sh]}\n")
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("agent__reviewer", {"task": "[c] review"})), text("All good."))
        server.add_task("[c]", tool_calls(call("bash", {"command": "uptime > out"})), text("fine"),
                        text("fine: app.py line 3"))
        outcome = Agent.from_config(base_url=server.base_url, model="m", trust=True, assume_yes=True).run(
            "[p] get it reviewed")
        child = [r for r in server.requests if "[c]" in r["messages"][1]["content"]]
    assert outcome.final_text == "All good."  # the parent's Stop ran no hook: there is none
    assert "refused for reviewer" in tool_results_of(child[1])[0] and not (sandboxed / "out").exists()
    assert child[2]["messages"][-1] == {"role": "user", "content": "cite the file you read"}


def tool_results_of(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_pre_compact_hook_is_told_before_the_history_is_compacted(sandboxed: Path) -> None:
    need("jq")
    script(sandboxed / "hooks" / "compact.sh",
           "#!/bin/sh\njq -c '{systemMessage: (\"compacting: \" + .trigger)}'\n")
    (sandboxed / "agent.yaml").write_text(
        "model: {provider: custom, name: m, base_url: http://127.0.0.1:9/v1, context_window: 3000}\n"
        "compaction: {keep_recent: 700, reserve: 500}\nhooks:\n  PreCompact:\n    - {command: [./hooks/compact.sh]}\n")
    events: list[Event] = []
    model = ScriptedModel([text("answer 1"), text("answer 2"), text("summary"), text("answer 3")])
    agent = Agent.from_config("agent.yaml", client=model, trust=True, on_event=events.append)
    for n in (1, 2, 3):
        agent.run(f"task {n}: " + f"{n}" * 3000)
    assert "compacting: threshold" in notices(events)


def test_the_trust_summary_lists_each_hook_as_it_runs(workdir: Path, temp_home: Path) -> None:
    script(workdir / "hooks" / "guard.sh", "#!/bin/sh\nexit 0\n")
    project(workdir, "  PreToolUse:\n    - {matcher: bash, command: [./hooks/guard.sh, --strict], "
                     "sandbox: {network: true}}\n")
    shown = nami("trust", "--summary").output
    assert f'runs hook PreToolUse for \'bash\': ["{workdir / "hooks" / "guard.sh"}", "--strict"], ' \
           f'sandbox {{"network": true}}' in shown


def test_nami_policy_test_says_the_hooks_did_not_run(workdir: Path, temp_home: Path) -> None:
    marker = workdir / "ran"
    script(workdir / "hooks" / "mark.sh", f"#!/bin/sh\ntouch {marker}\nexit 2\n")
    project(workdir, "  PreToolUse:\n    - {command: [./hooks/mark.sh]}\n",
            extra="policy_tests:\n  - {call: {tool: bash, args: {command: ls}}, expect: ask}\n")
    result = nami("policy", "test")
    assert "1 passed" in result.output and "1 PreToolUse hook not run here" in result.output
    assert not marker.exists()


def test_a_module_planted_where_a_python_hook_imports_stops_the_hook(sandboxed: Path) -> None:
    """A red team's finding: a json.py written beside `python3 -m hookpkg` ran inside the hook."""
    (sandboxed / "hookpkg").mkdir()
    (sandboxed / "hookpkg" / "__init__.py").write_text("")
    (sandboxed / "hookpkg" / "__main__.py").write_text("import json, sys\njson.load(sys.stdin)\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [python3, -m, hookpkg]}\n",
            extra="permissions: {write: allow}\n")
    plant = call("write_file", {"path": "json.py", "content": "import sys\nprint('PLANTED', file=sys.stderr)\n"
                                                               "sys.exit(2)\n"})
    server, _, _ = run([tool_calls(plant), tool_calls(call("bash", {"command": "echo hi"})), text("ok")],
                       assume_yes=True, env={"PYTHONDONTWRITEBYTECODE": "1"})
    result = tool_results(server)[-1]
    assert "PLANTED" not in result and "its code changed during this session" in result


def test_every_hook_gets_the_audit_logs_latest_hash(sandboxed: Path) -> None:
    need("jq")
    script(sandboxed / "hooks" / "head.sh", "#!/bin/sh\njq -c '{decision: \"block\", reason: (\"head=\" + "
           "(.nami_audit_head // \"none\"))}'\n")
    project(sandboxed, "  PostToolUse:\n    - {command: [./hooks/head.sh]}\n", extra="audit: {path: audit.jsonl}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo one"})),
                        tool_calls(call("bash", {"command": "echo two"})), text("ok")], assume_yes=True)
    records = [json.loads(line) for line in (sandboxed / "audit.jsonl").read_text().splitlines()]
    first, second = tool_results(server)
    # A PostToolUse hook runs before its own call's record is written: it sees the record before it.
    assert "head=none" in first
    assert f"head={records[0]['hash']}" in second and len(records) == 2


def test_a_hooks_json_deny_or_block_refuses_the_call_with_its_reason(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "deny.sh", "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": "
           "{\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", "
           "\"permissionDecisionReason\": \"production is frozen\"}}'\n")
    script(sandboxed / "hooks" / "block.sh", "#!/bin/sh\ncat >/dev/null\n"
           "echo '{\"decision\": \"block\", \"reason\": \"no writes today\"}'\n")
    project(sandboxed, "  PreToolUse:\n    - {matcher: bash, command: [./hooks/deny.sh]}\n"
                       "    - {matcher: write_file, command: [./hooks/block.sh]}\n",
            extra="permissions: {write: allow}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi > out"}),
                                   call("write_file", {"path": "a.txt", "content": "x"})), text("ok")],
                       assume_yes=True)
    denied, blocked = tool_results(server)
    assert "production is frozen" in denied and "no writes today" in blocked
    assert not (sandboxed / "out").exists() and not (sandboxed / "a.txt").exists()


def test_the_hooks_environment_names_the_project_as_claude_codes_does(sandboxed: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """... and is scrubbed as tools' is: no secret-looking variable, no collector's credentials."""
    monkeypatch.setenv("DEPLOY_TOKEN", "s3cr3t")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer collector-secret")
    script(sandboxed / "hooks" / "where.sh", "#!/bin/sh\ncat >/dev/null\n"
           "echo \"claude=$CLAUDE_PROJECT_DIR nami=$NAMI_WORKSPACE\" "
           "\"token=${DEPLOY_TOKEN:-none} otel=${OTEL_EXPORTER_OTLP_HEADERS:-none}\" >&2\nexit 2\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [./hooks/where.sh]}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert f"claude={sandboxed} nami={sandboxed} token=none otel=none" in tool_results(server)[0]


def test_the_users_own_hooks_run_before_the_projects(sandboxed: Path, temp_home: Path) -> None:
    """Hooks in the user config run with the project's, first. Claude Code keeps a user's hooks in
    ~/.claude/hooks: shown in the sandbox, which hides the rest of the home folder."""
    script(temp_home / ".claude" / "hooks" / "audit.sh",
           "#!/bin/sh\ncat >/dev/null\necho 'the user hook ran first' >&2\nexit 2\n")
    mine = temp_home / ".config" / "nami"
    mine.mkdir(parents=True)
    (mine / "config.yaml").write_text("hooks:\n  PreToolUse:\n"
                                      "    - {matcher: bash, command: [~/.claude/hooks/audit.sh]}\n")
    script(sandboxed / "hooks" / "project.sh", "#!/bin/sh\necho 'the project hook ran' >&2\nexit 2\n")
    project(sandboxed, "  PreToolUse:\n    - {command: [./hooks/project.sh]}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"}),
                                   call("write_file", {"path": "a.txt", "content": "x"})), text("ok")],
                       assume_yes=True)
    by_the_user, by_the_project = tool_results(server)
    assert "the user hook ran first" in by_the_user
    assert "the project hook ran" in by_the_project


def test_a_hook_kept_in_namis_own_folders_fails_saying_why(sandboxed: Path, temp_home: Path) -> None:
    """nami's own config folder is sealed in every sandbox: a hook beside the user config cannot be seen
    there, and says so rather than 'No such file or directory'."""
    mine = temp_home / ".config" / "nami"
    script(mine / "hooks" / "guard.sh", "#!/bin/sh\nexit 0\n")
    (mine / "config.yaml").write_text("hooks:\n  PreToolUse:\n    - {command: [./hooks/guard.sh]}\n")
    (sandboxed / "agent.yaml").write_text("tools: {builtin: [bash]}\n")
    server, _, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert "is in nami's own folders, which no sandboxed process sees" in tool_results(server)[0]


def test_a_hook_has_no_network_unless_its_sandbox_says_so(sandboxed: Path) -> None:
    from tests.local_http import QuietHandler, serving

    heard: list[str] = []

    class Listener(QuietHandler):
        def do_GET(self) -> None:
            heard.append(self.path)
            self.reply(200, b"ok")

    with serving(Listener) as url:
        reach = "import urllib.request, sys\nurllib.request.urlopen(sys.argv[1], timeout=5)\n"
        script(sandboxed / "hooks" / "reach.py", "#!/usr/bin/env python3\n" + reach)
        project(sandboxed, f"  PostToolUse:\n    - {{matcher: bash, command: [python3, ./hooks/reach.py, '{url}/closed']}}\n"
                           f"    - {{matcher: bash, command: [python3, ./hooks/reach.py, '{url}/open'], "
                           "sandbox: {network: true}}\n")
        _, events, _ = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert heard == ["/open"]
    assert "failed" in notices(events) and "the run goes on" in notices(events)


def test_a_hook_writes_in_the_workspace_only_where_its_sandbox_says_so(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "log.sh", "#!/bin/sh\njq -c '{tool: .tool_name}' >> \"$NAMI_WORKSPACE/calls.log\"\n")
    (sandboxed / "calls.log").write_text("")
    project(sandboxed, "  PostToolUse:\n    - {command: [./hooks/log.sh], sandbox: {writable: [calls.log]}}\n")
    need("jq")
    run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert (sandboxed / "calls.log").read_text() == '{"tool":"bash"}\n'


def test_an_observing_hook_that_times_out_is_a_notice_and_the_result_stands(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "slow.sh", "#!/bin/sh\nsleep 60\n")
    project(sandboxed, "  PostToolUse:\n    - {command: [./hooks/slow.sh], timeout: 0.5}\n"
                       "  Stop:\n    - {command: [./hooks/slow.sh], timeout: 0.5}\n")
    server, events, outcome = run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    assert tool_results(server)[0].strip() == "hi" and outcome.final_text == "ok"
    said = notices(events)
    assert "hook PostToolUse" in said and "hook Stop" in said and said.count("timed out") == 2


def test_a_user_prompt_hooks_additional_context_reaches_the_model(sandboxed: Path) -> None:
    script(sandboxed / "hooks" / "context.sh", "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": "
           "{\"hookEventName\": \"UserPromptSubmit\", \"additionalContext\": \"Freeze until Monday.\"}}'\n")
    project(sandboxed, "  UserPromptSubmit:\n    - {command: [./hooks/context.sh]}\n")
    server, _, _ = run([text("ok")])
    assert "Freeze until Monday." in server.requests[0]["messages"][-1]["content"]


def test_nami_log_replay_runs_no_hook_and_says_so(workdir: Path, temp_home: Path) -> None:
    marker = workdir / "ran"
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\naudit: {path: audit.jsonl}\n")
    run([tool_calls(call("bash", {"command": "echo hi"})), text("ok")], assume_yes=True)
    script(workdir / "hooks" / "mark.sh", f"#!/bin/sh\ntouch {marker}\nexit 2\n")
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\naudit: {path: audit.jsonl}\n"
                                        "hooks:\n  PreToolUse:\n    - {command: [./hooks/mark.sh]}\n")
    replayed = run_nami(None, "log", "--replay", "--config", "agent.yaml", cwd=workdir)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 of 1 call of" in replayed.stderr and "1 PreToolUse hook not run here" in replayed.stderr
    assert not marker.exists()


def test_a_session_taken_up_again_starts_with_source_resume(sandboxed: Path) -> None:
    need("jq")
    script(sandboxed / "hooks" / "start.sh", "#!/bin/sh\njq -r '\"Session source: \" + .source'\n")
    project(sandboxed, "  SessionStart:\n    - {command: [./hooks/start.sh]}\n")
    assert run_nami(None, "trust", "--yes", cwd=sandboxed).returncode == 0
    with FakeOpenAIServer([text("a"), text("b")]) as server:
        assert run_nami(server, "run", "one", cwd=sandboxed).returncode == 0
        resumed = run_nami(server, "run", "--continue", "two", cwd=sandboxed)
        assert resumed.returncode == 0, resumed.stderr
    assert "Session source: startup" in server.requests[0]["messages"][-1]["content"]
    assert "Session source: resume" in server.requests[1]["messages"][-1]["content"]


def test_nami_check_explains_a_hook_copied_from_claude_codes_settings(workdir: Path, temp_home: Path) -> None:
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, write_file, edit_file]}\nhooks:\n  PreToolUse:\n"
        "    - matcher: Bash\n      hooks:\n        - {type: command, command: ./guard.sh}\n"
        "    - {matcher: Bash, command: \"./guard.sh --strict 'a b'\"}\n")
    shown = nami("check").output
    assert "agent.yaml:5:7: $.hooks.PreToolUse[0].hooks: Claude Code's nested form: nami's is flat" in shown
    assert "agent.yaml:7:32: $.hooks.PreToolUse[1].command: a hook's command is a list of words, run without a " \
           "shell: [\"./guard.sh\", \"--strict\", \"a b\"]" in shown
    # Written as nami takes them, with Claude Code's tool names: warnings (such a hook would never run).
    (workdir / "agent.yaml").write_text(
        "tools: {builtin: [bash, write_file, edit_file]}\nhooks:\n  PreToolUse:\n"
        "    - {matcher: 'Write|Edit', command: [./guard.sh]}\n    - {matcher: 'mcp__github__.*', command: [./g]}\n"
        "  PostToolUse:\n    - {matcher: '^github__', command: [./g]}\n    - {matcher: bash, command: [./g]}\n")
    checked = nami("check")
    assert checked.exit_code == 0, checked.output
    assert "agent.yaml:4:17: $.hooks.PreToolUse[0].matcher: warning: matcher 'Write|Edit' matches none of this " \
           "agent's tools: it names Claude Code's Write, Edit, MultiEdit; nami's tool names differ (matcher: " \
           "\"^(write_file|edit_file)$\")" in checked.output
    assert "agent.yaml:5:17: $.hooks.PreToolUse[1].matcher: warning: matcher 'mcp__github__.*' matches none of " \
           "this agent's tools: nami names an MCP server's tools SERVER__TOOL, without Claude Code's mcp__ " \
           "('github__.*')" in checked.output
    assert "3 warnings" not in checked.output and "2 warnings" in checked.output  # ^github__: a server's, maybe
