"""runners/plan_step.py's sealed copy of a plan file: once sealed nothing writes, grows or shrinks it, a writer
at the file's path changes nothing in it, and a child process reads it as /dev/fd/N."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nami_yaml.runners.plan_step import SEALING, sealed_copy

pytestmark = pytest.mark.skipif(not SEALING, reason="memfd and file seals are Linux's")


def test_the_sealed_copy_is_hashed_and_cannot_be_changed(tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    plan.write_bytes(b"create web\n" * 1000)
    made = sealed_copy(plan)
    assert not isinstance(made, str), made
    fd, sha256 = made
    try:
        assert sha256 == hashlib.sha256(b"create web\n" * 1000).hexdigest()
        for change in (lambda: os.pwrite(fd, b"destroy", 0), lambda: os.ftruncate(fd, 0),
                       lambda: os.ftruncate(fd, 1 << 20)):
            with pytest.raises(PermissionError) as raised:
                change()
            assert raised.value.errno == errno.EPERM
        # nor opened anew for writing through its /proc path
        with pytest.raises(PermissionError), open(f"/proc/self/fd/{fd}", "r+b") as reopened:
            reopened.write(b"destroy")
        plan.chmod(0o600)
        plan.write_bytes(b"destroy everything\n")  # the file on disk: not the copy
        # A child reads the copy by its descriptor, from the start, whatever this process read before.
        read = subprocess.run([sys.executable, "-c", f"import sys; sys.stdout.write(open('/dev/fd/{fd}').read())"],
                              pass_fds=(fd,), capture_output=True, text=True, check=True)
        assert read.stdout == "create web\n" * 1000
    finally:
        os.close(fd)


def test_only_a_regular_file_is_sealed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("plan\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert isinstance(sealed_copy(tmp_path / "link"), str)  # never through a link planted at its path
    assert "not a regular file" in str(sealed_copy(tmp_path))
    assert isinstance(sealed_copy(tmp_path / "missing"), str)
