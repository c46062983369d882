"""An OAuth-protected MCP server for the tests, on 127.0.0.1: the official SDK's ``MCPServer`` with its own
authorization-server routes (protected-resource metadata, dynamic client registration, authorize, token with
refresh) over a small in-memory provider whose authorization endpoint approves at once (the test plays the
person: it follows the authorization URL with an HTTP client).

Tools: ``whoami`` (the client id the token was granted to), ``revoke`` (forgets every access token: the next
request gets 401). ``--state FILE`` writes what the tests check (how many refreshes), ``--expires-in N`` the
lifetime of access tokens it grants. Prints its MCP URL on stdout once it listens.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
import time
import warnings
from pathlib import Path

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


def option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


class AutoApprove(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self, expires_in: int, state: Path | None) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.expires_in = expires_in
        self.state = state
        self.refreshed = 0
        self.registered = 0

    def _save(self) -> None:
        if self.state is not None:
            self.state.write_text(json.dumps({"refreshed": self.refreshed, "registered": self.registered}))

    def _grant(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"acc_{secrets.token_hex(16)}", f"ref_{secrets.token_hex(16)}"
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.expires_in, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(access_token=access, expires_in=self.expires_in, scope=" ".join(scopes),
                          refresh_token=refresh)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.registered += 1
        self._save()

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(code=f"code_{secrets.token_hex(16)}", client_id=client.client_id,
                                 scopes=params.scopes or ["mcp"], expires_at=time.time() + 300,
                                 code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                                 redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                                 resource=params.resource)
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        del self.codes[code.code]
        return self._grant(code.client_id, code.scopes, code.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            return None
        return found

    async def load_refresh_token(self, client: OAuthClientInformationFull, token: str) -> RefreshToken | None:
        return self.refresh.get(token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.refreshed += 1
        self._save()
        return self._grant(refresh_token.client_id, scopes or refresh_token.scopes, None)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    state = option("--state")
    provider = AutoApprove(int(option("--expires-in", "3600") or 3600), Path(state) if state else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", required_scopes=["mcp"],
                                validate_token_resource=False,
                                client_registration_options=ClientRegistrationOptions(
                                    enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]))
    server = MCPServer("protected", auth=settings, auth_server_provider=provider)

    @server.tool(description="Who the token was granted to.")
    def whoami() -> str:
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"client {token.client_id if token else None}"

    @server.tool(description="Forget every token: the next request is refused.")
    def revoke() -> str:
        provider.access.clear()
        provider.refresh.clear()
        return "revoked"

    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=False))
    print(f"{base}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
