"""The sandbox in a run, with the real bwrap and the model over HTTP (the fake server): what the model
reads when the sandbox stopped a call, what the audit log records, the offer to rerun a call unsandboxed
(sandbox.escalate), the approved `writes:` destination, and the one notice where there is no sandbox."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.agent.events import Event
from nami_yaml.agent.hooks import Decision
from nami_yaml.app.agent import Agent
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.policy.audit import default_audit_path
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.sandboxing import need_bwrap

OUTSIDE = Path("/var/tmp") / f"nami-sandbox-run-{os.getpid()}"
WRITE_OUTSIDE = f"echo hi > {OUTSIDE}"


@pytest.fixture
def project(workdir: Path, temp_home: Path) -> Path:
    need_bwrap()
    (workdir / "tools").mkdir()
    (workdir / "tools" / "export.yaml").write_text(
        "name: export\ndescription: Write a report.\nrisk: write\nwrites: [out]\n"
        "parameters: {type: object, properties: {out: {type: string}}, required: [out]}\n"
        "script: echo report > \"$out\"; echo beside > \"$out.bak\"\n")
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\n")
    yield workdir
    for leftover in (OUTSIDE, Path(f"{OUTSIDE}.bak")):
        leftover.unlink(missing_ok=True)


def audit_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in default_audit_path().read_text().splitlines()]


def run(server: FakeOpenAIServer, **options: Any) -> tuple[Agent, list[Event]]:
    events: list[Event] = []
    agent = Agent.from_config(base_url=server.base_url, model="m", trust=True, on_event=events.append, **options)
    agent.run("go")
    return agent, events


class Person:
    """An approver that says yes to the tool call and answers the sandbox's offer as told, noting each."""

    def __init__(self, rerun: bool):
        self.rerun = rerun
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return self.rerun if request.pending.source == "sandbox.escalate" else True


def test_a_sandbox_failure_reaches_the_model_with_the_key_and_the_audit_log(project: Path) -> None:
    with FakeOpenAIServer([tool_calls(call("bash", {"command": WRITE_OUTSIDE})), text("ok")]) as server:
        run(server, assume_yes=True)
        seen = server.requests[1]["messages"][-1]["content"]
    assert "Read-only file system" in seen and not OUTSIDE.exists()
    assert "declare it in agent.yaml (or your user config): sandbox: {writable: [" in seen
    line = audit_lines()[-1]
    assert line["plan"]["sandbox"]["mode"] == "workspace-write" and line["plan"]["sandbox"]["network"] is False
    assert line["sandbox_failure"]["kind"] == "write" and line["sandbox_failure"]["key"].startswith("sandbox: {")
    assert "escalated" not in line  # --yes answers for nobody: no rerun was offered


def test_a_person_may_rerun_the_call_once_without_the_sandbox(project: Path) -> None:
    person = Person(rerun=True)
    with FakeOpenAIServer([tool_calls(call("bash", {"command": WRITE_OUTSIDE})), text("ok")]) as server:
        _, events = run(server, approve=person)
        seen = server.requests[1]["messages"][-1]["content"]
    assert OUTSIDE.read_text() == "hi\n"
    offer = person.asked[-1]
    assert offer.risk == "exec" and "WITHOUT the sandbox" in (offer.pending.reason or "")
    assert offer.plan()["sandbox"]["mode"] == "off"  # the prompt shows the rerun's sandbox: none
    assert "rerun without the sandbox, approved by the user" in seen and "Read-only" not in seen
    assert [e.source for e in events if e.type == "approval"] == ["user", "user"]  # type: ignore[attr-defined]
    line = audit_lines()[-1]
    assert line["plan"]["sandbox"]["mode"] == "off" and "approved by the user" in line["plan"]["sandbox"]["reason"]
    assert line["escalated"]["first"]["sandbox_failure"]["kind"] == "write" and line["ok"] is True


def test_a_no_keeps_the_sandboxed_result(project: Path) -> None:
    person = Person(rerun=False)
    with FakeOpenAIServer([tool_calls(call("bash", {"command": WRITE_OUTSIDE})), text("ok")]) as server:
        run(server, approve=person)
        seen = server.requests[1]["messages"][-1]["content"]
    assert not OUTSIDE.exists() and "Read-only file system" in seen
    assert [r.pending.source for r in person.asked] == ["permissions.exec", "sandbox.escalate"]


def test_no_offer_with_escalate_never_or_where_exec_calls_are_denied(project: Path) -> None:
    beside = Path(f"{OUTSIDE}.bak")
    for extra, made in (("sandbox: {escalate: never}\n", call("bash", {"command": f"echo x > {beside}"})),
                        # export into an area declared writable is a write; run again unsandboxed it would be
                        # an exec call, which is denied
                        (f"permissions: {{write: ask, exec: deny}}\nsandbox: {{writable: [{OUTSIDE}]}}\n",
                         call("export", {"out": str(OUTSIDE)}))):
        (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\n" + extra)
        person = Person(rerun=True)
        with FakeOpenAIServer([tool_calls(made), text("ok")]) as server:
            run(server, approve=person)
            seen = server.requests[1]["messages"][-1]["content"]
        assert not beside.exists() and "Read-only file system" in seen, extra
        assert [r.pending.source for r in person.asked] == ["permissions.exec" if "never" in extra
                                                            else "permissions.write"], extra


def test_a_writes_destination_outside_the_workspace_is_an_exec_question(project: Path, temp_home: Path) -> None:
    """Sixth review (issue 40, item 4): with write: allow, dest=~/.config/git/config (an fsmonitor) was written
    unasked: a list of names judged it. Outside the workspace and the writable areas is an exec question."""
    (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\npermissions: {write: allow}\n")
    person = Person(rerun=False)
    with FakeOpenAIServer([tool_calls(call("export", {"out": str(OUTSIDE)})), text("ok")]) as server:
        run(server, approve=person)
    assert [r.pending.source for r in person.asked][:1] == ["permissions.exec"]
    assert "outside the workspace and the writable areas" in (person.asked[0].call.risk_reason or "")
    inside = Person(rerun=False)
    with FakeOpenAIServer([tool_calls(call("export", {"out": "report.txt"})), text("ok")]) as server:
        run(server, approve=inside)
    assert inside.asked == [] and (project / "report.txt").read_text() == "report\n"  # write: allow holds there


def test_a_write_into_what_the_sandbox_hides_is_refused_whoever_approves(project: Path, temp_home: Path) -> None:
    ssh = temp_home / ".ssh"
    ssh.mkdir()
    (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\n")
    person = Person(rerun=True)
    with FakeOpenAIServer([tool_calls(call("export", {"out": str(ssh / "authorized_keys")})), text("ok")]) as server:
        run(server, approve=person)
        seen = server.requests[1]["messages"][-1]["content"]
    assert not (ssh / "authorized_keys").exists() and person.asked == []
    assert "which the sandbox hides from tools" in seen


def test_an_approved_writes_destination_outside_is_written_and_nothing_beside_it(project: Path) -> None:
    shown: list[dict[str, Any]] = []

    def approve(request: ApprovalRequest) -> Decision:
        shown.append(request.plan()["sandbox"])
        return Decision.allow(source="user") if request.pending.source != "sandbox.escalate" else Decision.deny()

    with FakeOpenAIServer([tool_calls(call("export", {"out": str(OUTSIDE)})), text("ok")]) as server:
        run(server, approve=approve)
        seen = server.requests[1]["messages"][-1]["content"]
    assert str(OUTSIDE) in shown[0]["writable"]  # the approval prompt shows what the yes makes writable
    assert OUTSIDE.read_text() == "report\n" and not Path(f"{OUTSIDE}.bak").exists()
    assert "Read-only file system" in seen


def test_without_bwrap_one_notice_per_agent_says_why(project: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in ("bash", "echo"):
        (bare / program).symlink_to(f"/usr/bin/{program}" if Path(f"/usr/bin/{program}").exists() else f"/bin/{program}")
    monkeypatch.setenv("PATH", str(bare))
    script = [tool_calls(call("bash", {"command": "echo one"})), text("1"),
              tool_calls(call("bash", {"command": "echo two"})), text("2")]
    with FakeOpenAIServer(script) as server:
        events: list[Event] = []
        agent = Agent.from_config(base_url=server.base_url, model="m", trust=True, assume_yes=True,
                                  on_event=events.append)
        agent.run("first")
        agent.run("second")
    notices = [e.message for e in events if e.type == "notice"]  # type: ignore[attr-defined]
    assert len(notices) == 1 and "tools run without a sandbox here" in notices[0] and "bwrap" in notices[0]
    assert [e for e in events if e.type == "tool_result" and e.ok] != []  # type: ignore[attr-defined]


def test_a_writes_destination_is_judged_from_the_tools_cwd(project: Path, temp_home: Path) -> None:
    """Red team: a tool with `cwd: docs` and a link docs/cfg -> ~/.config/git: dest=cfg/config was judged
    from the workspace (harmless) and mounted from docs/ (the user's git config), unasked."""
    (temp_home / ".config" / "git").mkdir(parents=True)
    (temp_home / ".config" / "git" / "config").write_text("[user]\n")
    (project / "docs").mkdir()
    (project / "docs" / "cfg").symlink_to(temp_home / ".config" / "git")
    (project / "tools" / "save.yaml").write_text(
        "name: save\ndescription: Save.\nrisk: write\nwrites: [dest]\ncwd: docs\n"
        "parameters: {type: object, properties: {dest: {type: string}}, required: [dest]}\n"
        "script: echo '[core] fsmonitor = id' >> \"$dest\"\n")
    (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\npermissions: {write: allow, exec: deny}\n")
    with FakeOpenAIServer([tool_calls(call("save", {"dest": "cfg/config"})), text("ok")]) as server:
        run(server, approve=Person(rerun=True))
        seen = server.requests[1]["messages"][-1]["content"]
    assert (temp_home / ".config" / "git" / "config").read_text() == "[user]\n"
    assert seen.startswith("Denied by permissions.exec"), seen


TIMEIT = ('python3 -m timeit -n1 -r1 -s "import os" "class X: __class_getitem__ = os.system\n'
          'X[\\"r\\"+\\"m -rf victim\\"]"')


def test_a_program_denied_by_name_is_masked_in_the_bash_calls_of_the_project(project: Path) -> None:
    """Sixth review (issue 40, item 2): under deny rm, python's timeit ran os.system("r"+"m -rf victim") past
    the line reading (an exec question; --yes deleted victim/). The rule now masks rm in the sandbox."""
    (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\n"
                                        "rules:\n  - {tool: bash, command: [rm, git push], decision: deny}\n")
    (project / "victim").mkdir()
    with FakeOpenAIServer([tool_calls(call("bash", {"command": TIMEIT})), text("ok")]) as server:
        run(server, assume_yes=True)
        seen = server.requests[1]["messages"][-1]["content"]
    assert (project / "victim").is_dir(), seen
    assert "rm: Permission denied" in seen  # it ran (--yes), and rm could not
    line = audit_lines()[-1]
    assert line["plan"]["sandbox"]["home"] == "hidden"
    assert any(path.endswith("/rm") for path in line["plan"]["sandbox"]["masked"])  # git push: line reading only
    assert not any("git" in path for path in line["plan"]["sandbox"]["masked"])


def test_a_writes_destination_with_a_tilde_is_judged_in_the_home_folder_too(project: Path, temp_home: Path) -> None:
    """`~/report.txt` was judged as ./~/report.txt (inside the workspace: no question under write: allow),
    while a program expanding ~ itself (eval, expanduser) writes the home folder's file."""
    (project / "tools" / "expand.yaml").write_text(
        "name: expand\ndescription: d\nrisk: write\nwrites: [out]\n"
        "parameters: {type: object, properties: {out: {type: string}}, required: [out]}\n"
        "script: eval \"echo report > $out\"\n")
    (project / "agent.yaml").write_text("tools: {builtin: [bash], files: [tools/]}\npermissions: {write: allow}\n")
    person = Person(rerun=False)
    with FakeOpenAIServer([tool_calls(call("expand", {"out": "~/report.txt"})), text("ok")]) as server:
        run(server, approve=person)
    assert [r.pending.source for r in person.asked][:1] == ["permissions.exec"]
    assert str(temp_home / "report.txt") in (person.asked[0].call.risk_reason or "")
    assert (temp_home / "report.txt").read_text() == "report\n"  # approved: written where the program writes


def test_no_rerun_without_the_sandbox_where_it_masked_a_denied_program(project: Path) -> None:
    """A deny is never approved around: unsandboxed, the masked program would run."""
    (project / "agent.yaml").write_text("tools: {builtin: [bash]}\nrules:\n  - {tool: bash, command: [rm], decision: deny}\n")
    (project / "victim").mkdir()
    person = Person(rerun=True)
    # The line never names rm (line reading cannot see it); the mask in the sandbox stops it.
    encoded = base64.b64encode(f"rm -rf victim; {WRITE_OUTSIDE}\n".encode()).decode()
    command = f"echo {encoded} | base64 -d > clean.sh && bash clean.sh"
    with FakeOpenAIServer([tool_calls(call("bash", {"command": command})), text("ok")]) as server:
        run(server, approve=person)
    assert (project / "victim").is_dir() and not OUTSIDE.exists()
    assert len(person.asked) == 1 and person.asked[0].pending.source != "sandbox.escalate"  # none offered
