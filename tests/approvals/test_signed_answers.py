"""Approvers who sign their answers with an SSH key (approvals.approvers: {alice: {ssh_public_key: …}}):
nothing secret is in the answer file, and a signature counts only for what it signed (the approval, the
call's digest, the answer, its reason, the answering OS user)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nami_yaml.approvals.queue import identify
from nami_yaml.approvals.signing import sign
from nami_yaml.testing import FakeOpenAIServer
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, start
from tests.helpers import write
from tests.programs import need


def keypair(folder: Path, name: str) -> tuple[Path, str]:
    """A fresh ed25519 key without a passphrase: its private key's path and its public key's line."""
    need("ssh-keygen")
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return key, key.with_suffix(".pub").read_text().strip()


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    return {name: keypair(tmp_path / "keys", name) for name in ("alice", "bob")}


def test_a_signature_counts_only_for_what_it_signed(keys: dict[str, tuple[Path, str]]) -> None:
    alice_key, alice_public = keys["alice"]
    listed = {"alice": alice_public}
    answer = {"id": "0123456789ab", "digest": "d" * 64, "answer": "approve", "reason": "ok", "uid": os.getuid()}
    signed = {**answer, "signature": sign(str(alice_key), answer)}
    who = identify(signed, os.getuid(), {"alice": ""}, listed)
    assert isinstance(who, tuple) and who[:2] == ("approver:alice", "alice") and who[2].startswith("ssh key, as OS")
    # The same signature on another answer, digest, approval or OS user's file: it is nobody's.
    for changed in ({"answer": "deny"}, {"digest": "e" * 64}, {"id": "ba9876543210"}, {"reason": "other"}):
        assert "not one by a key of approvals.approvers" in str(identify({**signed, **changed}, os.getuid(),
                                                                          {"alice": ""}, listed))
    other_uid = os.getuid() + 1
    assert "not one by a key" in str(identify({**signed, "uid": other_uid}, other_uid, {"alice": ""}, listed))
    # Bob's key, which approvals.approvers does not list: nobody.
    by_bob = {**answer, "signature": sign(str(keys["bob"][0]), answer)}
    assert "not one by a key" in str(identify(by_bob, os.getuid(), {"alice": ""}, listed))


def test_a_run_takes_an_answer_signed_by_a_listed_key(project: Path, fake_openai: FakeOpenAIServer,
                                                       runs: list[Run], keys: dict[str, tuple[Path, str]]) -> None:
    alice_key, alice_public = keys["alice"]
    write(project / "agent.yaml", agent_yaml(f"  approvers:\n    alice: {{ssh_public_key: '{alice_public}'}}\n"))
    run, approval_id = start(project, fake_openai, runs, answer="made it")

    unlisted = approvals(project, "approve", approval_id, env={"NAMI_APPROVER_KEY": str(keys["bob"][0])})
    assert unlisted.returncode == 2 and "not one by a key of approvals.approvers" in unlisted.stderr
    plain = approvals(project, "approve", approval_id)  # the OS user alone: approvers are named here
    assert plain.returncode == 2 and "sign with your key ($NAMI_APPROVER_KEY)" in plain.stderr

    answered = approvals(project, "approve", approval_id, env={"NAMI_APPROVER_KEY": str(alice_key)})
    assert answered.returncode == 0, answered.stderr
    code, out, err = run.finish()
    assert code == 0 and out == "made it\n", err
    [line] = [line for line in audit_lines() if line["tool"] == "make_marker"]
    assert line["status"] == "ran" and "approved by alice (ssh key, as OS user " in line["reason"]


def test_an_unusable_key_is_a_clear_error(project: Path, fake_openai: FakeOpenAIServer, runs: list[Run],
                                          tmp_path: Path) -> None:
    need("ssh-keygen")
    run, approval_id = start(project, fake_openai, runs)
    missing = approvals(project, "approve", approval_id, env={"NAMI_APPROVER_KEY": str(tmp_path / "nope")})
    assert missing.returncode == 2 and "which is not a file" in missing.stderr and "Traceback" not in missing.stderr
    assert approvals(project, "deny", approval_id, "--reason", "end").returncode == 0
    assert run.finish()[0] == 0
