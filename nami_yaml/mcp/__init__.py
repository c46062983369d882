"""The MCP client, over the official ``mcp`` SDK (the optional ``mcp`` extra): agent.yaml's ``mcp_servers:``
hand other servers' tools to nami, a tool source like the others. The server side (``nami mcp serve``, which
hands nami's tools to other agents) is ``nami_yaml.serve``; both check the SDK with :func:`require_sdk`.

Nothing here is imported unless one of those is used; :func:`require_sdk` says what to install.
"""

from __future__ import annotations

from nami_yaml.errors import ConfigError

INSTALL_HINT = "pip install 'nami_yaml[mcp]'"


class McpUnavailable(ConfigError):
    """The mcp extra is not installed."""


def require_sdk(what: str) -> None:
    """Raise McpUnavailable, saying what to install, when the ``mcp`` SDK cannot be imported."""
    try:
        import mcp  # noqa: F401
        import mcp_types  # noqa: F401
    except ImportError as exc:
        raise McpUnavailable(f"{what} needs the MCP SDK, which is not installed ({exc}). "
                             f"Install it with: {INSTALL_HINT} (in a checkout: pip install -e '.[mcp]')") from None
