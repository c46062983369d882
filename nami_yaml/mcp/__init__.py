"""The MCP client, over the official ``mcp`` SDK (the optional ``mcp`` extra): agent.yaml's ``mcp_servers:``
hand other servers' tools to nami, a tool source like the others. The server side (``nami mcp serve``, which
hands nami's tools to other agents) is ``nami_yaml.serve``; both check the SDK with :func:`require_sdk`.

Nothing here is imported unless one of those is used; :func:`require_sdk` says what to install.
"""

from __future__ import annotations

from nami_yaml.errors import ConfigError


class McpUnavailable(ConfigError):
    """The mcp extra is not installed."""


def require_sdk(what: str) -> None:
    """Raise McpUnavailable, saying what to install, when the ``mcp`` SDK cannot be imported."""
    try:
        import mcp  # noqa: F401
        import mcp_types  # noqa: F401
    except ImportError as exc:
        raise McpUnavailable(f"{what} needs the MCP SDK, which is not installed ({exc}). "
                             f"Install it with: {_pip()} install 'nami_yaml[mcp]' (in a checkout: {_pip()} install -e "
                             "'.[mcp]')") from None


def _pip() -> str:
    """pip of the Python nami runs in (a venv's: a bare `pip` may be the system's, refused on Debian)."""
    import sys

    return f"{sys.executable} -m pip"
