"""nami: a declarative, YAML-configured LLM agent.

``from nami_yaml import Agent`` is the Python API (docs/python-api.md). It is loaded on first use, so
``nami --help`` stays fast.
"""

from __future__ import annotations

import os as _os
import sys as _sys
from typing import TYPE_CHECKING, Any

from nami_yaml.version import __version__

if TYPE_CHECKING:
    from nami_yaml.agent.hooks import Decision
    from nami_yaml.app import Agent, load_agent
    from nami_yaml.policy.approval import ApprovalRequest

__all__ = ["Agent", "ApprovalRequest", "Decision", "__version__", "load_agent"]

_LAZY = {"Agent": "nami_yaml.app", "load_agent": "nami_yaml.app", "Decision": "nami_yaml.agent.hooks",
         "ApprovalRequest": "nami_yaml.policy.approval"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nami_yaml' has no attribute {name!r}")


def _forget_current_folder_under_dash_m() -> None:
    """``python -m nami_yaml…`` puts the current folder first on ``sys.path``, so a ``click.py`` or
    ``yaml.py`` in a cloned repository would be imported in place of the real package. While ``-m`` is
    locating our module, ``sys.argv[0]`` is ``"-m"``: only then is the entry dropped (``python -P`` and
    the ``nami`` command never add it). A library that imports nami keeps its ``sys.path`` as it is."""
    if _sys.argv[:1] != ["-m"] or getattr(_sys.flags, "safe_path", False) or not _sys.path:
        return
    try:
        first = _os.path.realpath(_sys.path[0] or _os.curdir)
        here = _os.path.realpath(_os.getcwd())
    except OSError:
        return
    if first == here:
        del _sys.path[0]


_forget_current_folder_under_dash_m()

# After the line above: git_index imports modules (dataclasses, re) a cloned folder could shadow.
from nami_yaml import git_index as _git_index  # noqa: E402


def _run_git(command: _git_index.GitCommand) -> str | None:
    """git_index's runner: the runners' one subprocess path (imported when git first runs: ``nami --help``
    imports none of it). Given here, where every import of nami_yaml passes first, because the leaf's
    users include config/, which may not import runners/: so every git command of nami runs this way."""
    from nami_yaml.runners.git_run import run_git

    return run_git(command)


_git_index.run_git_with(_run_git)
