"""nami: a declarative, YAML-configured LLM agent.

``from nami_yaml import Agent`` is the Python API (docs/python-api.md). It is loaded on first use, so
``nami --help`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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
