"""Shared helpers of the sandbox's tests: the real bwrap, or a skip (a fail where CI requires it), and
processes found by what they run, since a sandboxed process's pid is one of its own namespace."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nami_yaml.runners.sandbox.probe import availability

REQUIRED_VARIABLE = "NAMI_REQUIRE_BWRAP"


def need_bwrap() -> None:
    """Inside a test: skip (or fail, where NAMI_REQUIRE_BWRAP=1) when the sandbox cannot work here."""
    found = availability(os.environ)
    if found.available:
        return
    reason = f"the sandbox is not available here: {found.describe()}"
    if os.environ.get(REQUIRED_VARIABLE) == "1":
        pytest.fail(f"{reason}: {REQUIRED_VARIABLE}=1 requires it", pytrace=False)
    pytest.skip(reason)


def running(marker: str) -> list[int]:
    """The live (not zombie) processes of this machine whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def gone(marker: str, within: float = 5.0) -> bool:
    """Whether no process holding ``marker`` is left, waiting up to ``within`` seconds for the kernel to
    finish killing them (a wait for a state, not a measure of time)."""
    deadline = time.monotonic() + within
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(marker)
