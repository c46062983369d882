"""The trust fingerprint: what it sees of the files it covers."""

from __future__ import annotations

import os
import time
from pathlib import Path

from nami_yaml.config.trust import fingerprint


def test_a_file_past_the_hashing_budget_changed_with_its_old_mtime_restored_is_seen(tmp_path: Path) -> None:
    """Past the hashing budget only metadata counts. Size and mtime can be put back by anyone (touch -d);
    the inode change time cannot, so an edit that restores both still changes the fingerprint."""
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * 1000)
    before = os.stat(big)
    trusted = fingerprint([big], budget=10)
    time.sleep(0.05)  # file times move in clock ticks of a few milliseconds
    big.write_bytes(b"b" * 1000)
    os.utime(big, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(big).st_size == before.st_size and os.stat(big).st_mtime_ns == before.st_mtime_ns
    assert fingerprint([big], budget=10) != trusted


def test_a_file_replaced_by_another_with_the_same_metadata_is_seen(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * 1000)
    before = os.stat(big)
    trusted = fingerprint([big], budget=10)
    other = tmp_path / "other.bin"
    other.write_bytes(b"b" * 1000)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, big)
    assert fingerprint([big], budget=10) != trusted


def test_files_within_the_budget_are_hashed(tmp_path: Path) -> None:
    small = tmp_path / "small.py"
    small.write_text("A = 1\n")
    trusted = fingerprint([small])
    os.utime(small, ns=(1, 1))
    assert fingerprint([small]) == trusted  # metadata alone does not matter when the bytes are hashed
    small.write_text("A = 2\n")
    assert fingerprint([small]) != trusted


def test_a_fifo_among_the_files_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    assert fingerprint([fifo]) != fingerprint([])
