"""Keeping what nami holds (the model's API key above all) out of reach of the processes it starts."""

from __future__ import annotations

import sys


def keep_environment_private() -> None:
    """Make /proc/<nami>/environ unreadable to the processes nami starts (Linux).

    Tools never get the model's API key in their own environment, but without this any of them could
    read it from their parent: ``cat /proc/$PPID/environ``. A non-dumpable process's /proc files belong
    to root. Children are dumpable again after exec, so tools themselves are unaffected.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass
