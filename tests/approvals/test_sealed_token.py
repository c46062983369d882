"""An approver's token never lies in the clear in an answer file, which the queue folder's group can read until
the run took it: ``nami approvals approve`` (a real process, with ``$NAMI_APPROVER_TOKEN``) seals it for the run
that asked (approvals/sealed_token.py). What a group reader finds there opens for nobody else and counts for
nothing when copied into another answer; an answer with a token in the clear (an older nami's) is refused,
saying why."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from nami_yaml.approvals.binding import Binding
from nami_yaml.approvals.queue import Waiting
from nami_yaml.approvals.sealed_token import RunKey, seal
from nami_yaml.approvals.store import QueueFolder, process_start

ALICE = "alice-token-0123456789abcdef"
APPROVERS = {"alice": hashlib.sha256(ALICE.encode()).hexdigest()}
BINDING = Binding({"tool": "abc", "argv": "def"})
ID = "abcdef012345"


def pending(folder: QueueFolder, key: RunKey | None) -> Waiting:
    """A pending approval of this process (it plays the run that waits), as the queue keeps one."""
    record = {"id": ID, "state": "pending", "binding": BINDING.to_json(), "approvals": [], "required": 1,
              "run": {"pid": os.getpid(), "start": process_start(os.getpid()), "uid": os.getuid(),
                      "host": socket.gethostname()},
              **({"answer_key": key.to_json()} if key is not None else {})}
    waiting = Waiting(folder, record, BINDING, 1, 900, APPROVERS, answer_key=key)
    waiting.publish()
    return waiting


def answering(queue: Path, *args: str) -> subprocess.Popen[str]:
    """``nami approvals approve ID`` by alice, as another process."""
    return subprocess.Popen([sys.executable, "-m", "nami_yaml", "approvals", "--queue", str(queue), "approve", ID,
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NAMI_APPROVER_TOKEN": ALICE})


def answer_files(queue: Path, within: float = 60) -> list[Path]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = sorted(queue.glob(f"{ID}.answer.*.json"))
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("no answer was written")


def refusal(waiting: Waiting, answer: dict[str, object]) -> str:
    """Why the run refuses ``answer`` (written as an answer file of this user): its receipt's message."""
    waiting.folder.create(f"{ID}.answer.aaaa.json", answer, 0o600)
    assert waiting.take() is None
    receipt = waiting.folder.read(f"{ID}.receipt.aaaa.json")
    assert receipt is not None and receipt.data["accepted"] is False
    return str(receipt.data["message"])


def test_the_answer_file_holds_nothing_a_group_reader_could_use_again(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "queue"))
    waiting = pending(folder, RunKey.new())
    process = answering(folder.path)
    try:
        [file] = answer_files(folder.path)
        raw = file.read_text()
        assert ALICE not in raw and ALICE.encode().hex() not in raw  # not the token, in no spelling
        stored = folder.read(file.name)
        assert stored is not None and "token" not in stored.data and "sealed_token" in stored.data
        # A reader of the folder copies what it found into an answer of its own (another uid, another answer,
        # another approval): it opens for none of them.
        sealed = stored.data["sealed_token"]
        for changed in ({"uid": os.getuid() + 1}, {"answer": "deny"}, {"reason": "mine"}, {"id": "0" * 12}):
            assert waiting.answer_key is not None
            assert waiting.answer_key.open(sealed, {**stored.data, **changed}) is None
        assert RunKey.new().open(sealed, stored.data) is None  # another run's key opens nothing
        decided = waiting.take()  # the run takes it: alice, by her token
        assert decided is not None and decided.action == "allow" and "alice (token" in str(decided.reason)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "approved" in out
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_sealed_token_copied_into_another_users_answer_counts_for_nobody(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "queue"))
    key = RunKey.new()
    waiting = pending(folder, key)
    mine = {"id": ID, "digest": BINDING.digest, "answer": "approve", "reason": None, "uid": os.getuid() + 7}
    sealed = seal(ALICE, key.to_json(), mine)  # alice's, for another uid's answer
    refused = refusal(waiting, {**mine, "uid": os.getuid(), "sealed_token": sealed})
    assert "not sealed for this run over what the answer says" in refused


def test_a_token_in_the_clear_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "queue"))
    waiting = pending(folder, RunKey.new())
    old = {"id": ID, "digest": BINDING.digest, "answer": "approve", "reason": None, "uid": os.getuid(),
           "token": ALICE}
    assert "in the clear (written by an older nami)" in refusal(waiting, old)


def test_a_run_of_an_older_nami_gets_no_token_from_this_one(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "queue"))
    pending(folder, None)  # its pending file has no answer_key
    process = answering(folder.path)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, out + err
    assert "asked by an older nami, which takes a token only in the clear" in err
    assert list(folder.path.glob(f"{ID}.answer.*.json")) == []  # nothing was written
