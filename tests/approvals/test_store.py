"""The queue folder refuses what others could tamper with, and cleans up after itself."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from nami_yaml.approvals.store import QueueFolder
from nami_yaml.errors import ConfigError


def test_a_folder_others_may_write_needs_the_sticky_bit(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ConfigError, match="no sticky bit"):
        QueueFolder.open(str(shared))
    shared.chmod(0o1777)
    assert QueueFolder.open(str(shared)).path == shared


def test_nami_makes_its_own_folder_private(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "q"))
    assert (folder.path.stat().st_mode & 0o777) == 0o700


def test_files_are_never_written_over_or_read_through_a_link(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "q"))
    folder.create("abcdef012345.json", {"id": "abcdef012345"}, 0o644)
    with pytest.raises(FileExistsError):
        folder.create("abcdef012345.json", {"id": "other"}, 0o644)
    os.symlink(folder.path / "abcdef012345.json", folder.path / "0123456789ab.json")
    assert folder.read("0123456789ab.json") is None
    assert folder.read("abcdef012345.json") is not None


def test_old_answered_approvals_and_receipts_are_pruned(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "q"))
    folder.create("abcdef012345.json", {"id": "abcdef012345", "state": "approved"}, 0o644)
    folder.create("0123456789ab.json", {"id": "0123456789ab", "state": "pending"}, 0o644)
    folder.create("abcdef012345.receipt.aa.json", {"accepted": True}, 0o644)
    folder.prune(time.time() + 8 * 24 * 3600)
    assert folder.names() == ["0123456789ab.json"]


def test_a_queue_never_made_is_an_empty_one(tmp_path: Path) -> None:
    folder = QueueFolder.open(str(tmp_path / "never"), create=False)
    assert folder.listing() == [] and not folder.path.exists()


def test_an_approval_and_a_deny_that_arrive_together_end_as_the_deny(tmp_path: Path) -> None:
    """Any deny wins, whatever order the answers' names sort in (a red team's race)."""
    from nami_yaml.approvals.binding import Binding
    from nami_yaml.approvals.queue import Waiting

    folder = QueueFolder.open(str(tmp_path / "q"))
    binding = Binding({"tool": "abc"})
    waiting = Waiting(folder, {"id": "abcdef012345"}, binding, required=1, expires=900, approvers={
        "alice": hashlib.sha256(b"alice-token").hexdigest()})
    uid = os.getuid()
    answer = {"id": "abcdef012345", "digest": binding.digest, "uid": uid}
    folder.create("abcdef012345.answer.00aaaa.json", {**answer, "answer": "approve", "token": "alice-token"}, 0o600)
    folder.create("abcdef012345.answer.ffffff.json", {**answer, "answer": "deny", "reason": "not on prod"}, 0o600)
    decided = waiting.take()
    assert decided is not None and decided.action == "deny" and decided.reason == "not on prod"
