"""What an approval from the queue must be to count, on a real waiting run: the same call it was given for,
given in time, under rules that still do not deny, by enough different authenticated people."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from nami_yaml.approvals.store import QueueFolder
from nami_yaml.testing import FakeOpenAIServer
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, start
from tests.helpers import write

TOKENS = {"alice": "alice-secret-token-1", "bob": "bob-secret-token-2"}
APPROVERS = "  approvers:\n" + "".join(
    f"    {name}: {{token_sha256: {hashlib.sha256(token.encode()).hexdigest()}}}\n" for name, token in TOKENS.items())


def as_(name: str) -> dict[str, str]:
    return {"NAMI_APPROVER_TOKEN": TOKENS[name]}


def told(server: FakeOpenAIServer) -> str:
    message = server.requests[-1]["messages"][-1]
    assert message["role"] == "tool"
    return str(message["content"])


def test_two_approvers_for_prod_and_the_same_one_twice_counts_once(project: Path, fake_openai: FakeOpenAIServer,
                                                                   runs: list[Run]) -> None:
    write(project / "agent.yaml", agent_yaml(APPROVERS, "  staging: {approvals: {required: 1}}\n")
          .replace("prod: {env: {STAGE: prod}}", "prod: {env: {STAGE: prod}, approvals: {required: 2}}"))
    run, approval_id = start(project, fake_openai, runs, target="prod")
    first = approvals(project, "approve", approval_id, env=as_("alice"))
    assert first.returncode == 0 and "approved (1 of 2 approvers)" in first.stdout, first.stderr
    twice = approvals(project, "approve", approval_id, env=as_("alice"))
    assert twice.returncode == 2 and "alice has answered this approval already" in twice.stderr
    label_only = approvals(project, "approve", approval_id, env={**as_("alice"), "NAMI_APPROVER": "carol"})
    assert label_only.returncode == 2  # a label never makes a second person
    listed = json.loads(approvals(project, "show", approval_id, "--json").stdout)
    assert [a["who"] for a in listed["approvals"]] == ["alice"] and listed["state"] == "pending"
    assert not (project / "marker.txt").exists()
    second = approvals(project, "approve", approval_id, env=as_("bob"))
    assert second.returncode == 0, second.stderr
    code, _, err = run.finish()
    assert code == 0, err
    assert (project / "marker.txt").exists()
    [line] = [entry for entry in audit_lines() if entry["tool"] == "make_marker"]
    assert "alice (token, as OS user" in str(line["reason"]) and "bob (token" in str(line["reason"])


def test_where_approvers_are_named_only_their_tokens_approve(project: Path, fake_openai: FakeOpenAIServer,
                                                runs: list[Run]) -> None:
    write(project / "agent.yaml", agent_yaml(APPROVERS))
    run, approval_id = start(project, fake_openai, runs)
    wrong = approvals(project, "approve", approval_id, env={"NAMI_APPROVER_TOKEN": "guessed"})
    assert wrong.returncode == 2 and "is not one of approvals.approvers" in wrong.stderr
    unnamed = approvals(project, "approve", approval_id)  # an OS user alone, where approvers are named
    assert unnamed.returncode == 2 and "give your token ($NAMI_APPROVER_TOKEN)" in unnamed.stderr
    assert approvals(project, "deny", approval_id, "--reason", "stop", env=as_("bob")).returncode == 0
    assert run.finish()[0] == 0 and not (project / "marker.txt").exists()


def test_approvals_that_expired_refuse_the_call(project: Path, fake_openai: FakeOpenAIServer,
                                                runs: list[Run]) -> None:
    write(project / "agent.yaml", agent_yaml(APPROVERS + "  expires: 1\n")
          .replace("prod: {env: {STAGE: prod}}", "prod: {env: {STAGE: prod}, approvals: {required: 2}}"))
    run, approval_id = start(project, fake_openai, runs, target="prod")
    assert approvals(project, "approve", approval_id, env=as_("alice")).returncode == 0
    time.sleep(1.5)
    assert approvals(project, "approve", approval_id, env=as_("bob")).returncode == 0
    code, _, err = run.finish()
    assert code == 0, err
    assert not (project / "marker.txt").exists()
    assert "the approvals expired" in told(fake_openai)


def test_a_rule_changed_to_deny_while_it_waited_wins(project: Path, fake_openai: FakeOpenAIServer,
                                                     runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs)
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "nami" / "config.yaml"
    write(user_config, "rules:\n  - tool: make_marker\n    decision: deny\n    reason: frozen since noon\n")
    assert approvals(project, "approve", approval_id).returncode == 0
    code, _, err = run.finish()
    assert code == 0, err
    assert not (project / "marker.txt").exists()
    assert "refused now" in told(fake_openai) and "frozen since noon" in told(fake_openai)


def test_an_agent_yaml_changed_while_it_waited_refuses(project: Path, fake_openai: FakeOpenAIServer,
                                                       runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs)
    with (project / "agent.yaml").open("a") as file:
        file.write("# changed after the question was asked\n")
    assert approvals(project, "--queue", str(project / "queue"), "approve", approval_id).returncode == 0
    code, _, err = run.finish()
    assert code == 0, err
    assert not (project / "marker.txt").exists()
    assert "changed while the call waited for approval, and is not trusted" in told(fake_openai)


def test_an_answer_for_another_version_of_the_call_or_from_another_owner_is_refused(
        project: Path, fake_openai: FakeOpenAIServer, runs: list[Run]) -> None:
    run, approval_id = start(project, fake_openai, runs)
    folder = QueueFolder(project / "queue")
    forged = {"id": approval_id, "digest": "0" * 64, "answer": "approve", "uid": os.getuid()}
    folder.create(f"{approval_id}.answer.aaaa.json", forged, 0o600)
    claims = {**forged, "digest": json.loads((project / "queue" / f"{approval_id}.json").read_text())
              ["binding"]["digest"], "uid": os.getuid() + 4242}
    folder.create(f"{approval_id}.answer.bbbb.json", claims, 0o600)
    deadline = time.monotonic() + 30
    receipts: dict[str, str] = {}
    while len(receipts) < 2 and time.monotonic() < deadline:
        for nonce in ("aaaa", "bbbb"):
            stored = folder.read(f"{approval_id}.receipt.{nonce}.json")
            if stored is not None:
                assert stored.data["accepted"] is False
                receipts[nonce] = stored.data["message"]
        time.sleep(0.1)
    assert "another version of this call" in receipts["aaaa"]
    assert "claims to be" in receipts["bbbb"]
    assert not (project / "marker.txt").exists()
    assert approvals(project, "deny", approval_id, "--reason", "no").returncode == 0
    assert run.finish()[0] == 0 and not (project / "marker.txt").exists()
