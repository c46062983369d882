"""A project shipped to a Ray node is unpacked where only its user can put a folder: another user of the node
(who sees the digest's folder name while it unpacks, in a shared /tmp) cannot have the jobs run their
agent.yaml by making that folder first. Real folders owned by another user (the tests run as root, as CI)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from nami_yaml.batch import ship
from nami_yaml.batch.ship import PREFIX, pack, unpack

OTHER_USER = 65534  # nobody
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")


def packed(tmp_path: Path) -> tuple[bytes, str]:
    source = tmp_path / "project"
    source.mkdir()
    (source / "agent.yaml").write_text("model: {name: ours}\n")
    return pack(source)


def shared_tmp(tmp_path: Path) -> Path:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    return shared


def planted(folder: Path) -> Path:
    """Another user's folder with their agent.yaml, made first."""
    folder.mkdir()
    (folder / "agent.yaml").write_text("model: {name: theirs}\n")
    for path in (folder, folder / "agent.yaml"):
        os.chown(path, OTHER_USER, OTHER_USER)
    return folder


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = shared_tmp(tmp_path)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(ship, "_PRIVATE", {})
    return shared


@needs_root
def test_another_users_folder_named_by_the_digest_is_never_used(tmp_path: Path, temporary: Path) -> None:
    data, digest = packed(tmp_path)
    theirs = planted(temporary / f"{PREFIX}{digest[:20]}")  # in the shared folder itself, as before
    found = unpack(data, digest)
    assert found != theirs and (found / "agent.yaml").read_text() == "model: {name: ours}\n"
    base = found.parent
    info = base.stat()
    assert base.parent == temporary and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
    assert unpack(data, digest) == found  # still unpacked once, then reused


@needs_root
def test_a_private_folder_name_taken_by_another_user_is_not_used_either(tmp_path: Path, temporary: Path) -> None:
    data, digest = packed(tmp_path)
    taken = planted(temporary / f"nami-batch-projects-{os.getuid()}")
    taken.chmod(0o777)
    planted(taken / f"{PREFIX}{digest[:20]}")
    found = unpack(data, digest)
    assert taken not in found.parents and (found / "agent.yaml").read_text() == "model: {name: ours}\n"
    assert stat.S_IMODE(found.parent.stat().st_mode) == 0o700 and found.parent.stat().st_uid == os.getuid()


@needs_root
def test_in_a_base_others_may_write_a_folder_of_theirs_under_the_name_is_left_alone(tmp_path: Path) -> None:
    data, digest = packed(tmp_path)
    machine = shared_tmp(tmp_path)
    theirs = planted(machine / f"{PREFIX}{digest[:20]}")
    found = unpack(data, digest, machine)
    assert found != theirs and (found / "agent.yaml").read_text() == "model: {name: ours}\n"
    assert (theirs / "agent.yaml").read_text() == "model: {name: theirs}\n"
