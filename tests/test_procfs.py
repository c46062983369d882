"""The process list read from /proc: every process with its state, parent and group, read the way a finished
tool call reads it (is anything of its group still alive?), names with spaces and parentheses included."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from nami_yaml.procfs import processes

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc on this system")


def test_this_process_is_listed_with_its_parent_and_group() -> None:
    listed = {p.pid: p for p in processes() or []}
    me = listed[os.getpid()]
    assert (me.ppid, me.pgid, me.alive) == (os.getppid(), os.getpgid(0), True)


def test_a_name_with_spaces_and_parentheses_is_read_past(tmp_path: Path) -> None:
    program = tmp_path / "a) b (c"
    program.symlink_to(shutil.which("sleep") or "/bin/sleep")
    child = subprocess.Popen([str(program), "30"], start_new_session=True)
    try:
        listed = {p.pid: p for p in processes() or []}
        assert listed[child.pid].ppid == os.getpid() and listed[child.pid].pgid == child.pid
        child.kill()
        deadline = time.monotonic() + 10
        while listed[child.pid].alive and time.monotonic() < deadline:  # killed, not yet reaped: a zombie
            listed = {p.pid: p for p in processes() or []}
        assert listed[child.pid].state == "Z" and not listed[child.pid].alive
    finally:
        child.kill()
        child.wait()
