"""OAuth for HTTP MCP servers, through the SDK's client auth (``mcp.client.auth.OAuthClientProvider``:
authorization code with PKCE, dynamic client registration, refresh).

Two uses of one provider:

- ``nami mcp login SERVER`` (``login.py``): interactive, the whole flow of the SDK. The tokens are
  written to the token store (``token_store.py``) as soon as the SDK has them.
- a run (:func:`run_auth`): never interactive. Stored tokens go with every request, an expired one is
  refreshed first (and the refreshed one stored); a 401 the stored tokens cannot answer is not a login
  started in the middle of a run but :attr:`NamiOAuth.login_needed`, which the client turns into "run
  `nami mcp login SERVER`".

Tokens are never logged: the SDK's own auth logger is silenced (see _SDK_LOG).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, TypeVar

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, BaseModel, ValidationError

from nami_yaml.errors import ConfigError
from nami_yaml.mcp.token_store import AuthRecord, TokenStore, canonical_url
from nami_yaml.version import __version__

# The SDK logs a failed flow with its traceback, and a failed refresh with the server's answer: never shown
# (what failed reaches the person as nami's own message), never written anywhere.
_SDK_LOG = logging.getLogger("mcp.client.auth")
_SDK_LOG.addHandler(logging.NullHandler())
_SDK_LOG.propagate = False

CLIENT_NAME = "nami"


class McpLoginError(ConfigError):
    """``nami mcp login`` could not log in: the server has no OAuth, the person refused, the redirect never
    came, the token exchange failed."""


def login_hint(server: str) -> str:
    return f"run `nami mcp login {server}`"


# -- storage ---------------------------------------------------------------------------------------------


class StoredTokens:
    """The SDK's TokenStorage over the token store's record for one URL. ``fresh``: a login, which starts
    without tokens (it must ask the person) and reuses the client registered last time only if
    ``reuse_client`` (its redirect URI is still ours)."""

    def __init__(self, store: TokenStore, url: str, *, fresh: bool = False, reuse_client: bool = True):
        self.store = store
        self.url = canonical_url(url)
        self.record = store.load(url)
        self.fresh = fresh
        self.reuse_client = reuse_client
        self.context: OAuthContext | None = None  # the provider's: what it discovered (issuer, metadata)
        self.registered: OAuthClientInformationFull | None = None  # a client registered by this login
        self.saved = False  # tokens were written (a login succeeded as far as OAuth goes)

    async def get_tokens(self) -> OAuthToken | None:
        if self.fresh or self.record is None or self.record.tokens is None:
            return None
        return _valid(OAuthToken, self.record.tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        old = self.record
        issuer = _issuer(self.context) or (old.issuer if old is not None else "")
        if self.registered is not None:
            client = self.registered.model_dump(mode="json", exclude_none=True)
        else:  # the client of the stored record, as long as the same authorization server granted this
            client = old.client_info if old is not None and old.issuer == issuer else None
        expires = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        server, resource = _dumped(self.context)
        if old is not None and old.issuer == issuer:  # a refresh discovers nothing: what the login found stays
            server, resource = server or old.server_metadata, resource or old.resource_metadata
        self.record = AuthRecord(url=self.url, issuer=issuer, tokens=tokens.model_dump(mode="json", exclude_none=True),
                                 expires_at=expires, client_info=client, server_metadata=server,
                                 resource_metadata=resource)
        self.store.save(self.record)
        self.fresh, self.saved = False, True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.registered is not None:
            return self.registered
        if self.record is None or self.record.client_info is None or not self.reuse_client:
            return None
        return _valid(OAuthClientInformationFull, self.record.client_info)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.registered = client_info  # stored with the tokens when they come: a registration alone is no login

    @property
    def expires_at(self) -> float | None:
        return None if self.fresh or self.record is None else self.record.expires_at


# -- the provider ----------------------------------------------------------------------------------------


class NamiOAuth(OAuthClientProvider):
    """The SDK's provider, with the expiry of stored tokens remembered across runs (so an expired token is
    refreshed before it is sent) and, when not ``interactive``, no login started by a 401: one refresh is
    tried, then :attr:`login_needed` is set and the 401 goes back to the transport as it came."""

    def __init__(self, server_url: str, storage: StoredTokens, *, redirect_uri: str = "http://127.0.0.1/callback",
                 interactive: bool = False,
                 redirect_handler: Callable[[str], Awaitable[None]] | None = None,
                 callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None):
        metadata = OAuthClientMetadata(client_name=CLIENT_NAME, client_uri=None,
                                       redirect_uris=[AnyUrl(redirect_uri)],
                                       grant_types=["authorization_code", "refresh_token"],
                                       software_id="nami", software_version=__version__)
        super().__init__(server_url, metadata, storage, redirect_handler=redirect_handler,
                         callback_handler=callback_handler)
        self.storage = storage
        self.interactive = interactive
        self.login_needed = False
        self.login_told = False  # the person was told (once) to log in
        storage.context = self.context

    def issuer(self) -> str:
        """The authorization server that grants the tokens, once discovered ("" before)."""
        return _issuer(self.context)

    async def _initialize(self) -> None:
        """The stored login as the SDK keeps it, and what the SDK does not store: when the access token
        expires, and where the authorization server's endpoints are (a refresh goes there)."""
        await super()._initialize()
        record, context = self.storage.record, self.context
        if context.current_tokens is None or record is None:
            return
        if self.storage.expires_at is not None:
            context.token_expiry_time = self.storage.expires_at
        with contextlib.suppress(ValidationError):
            if record.server_metadata is not None and context.oauth_metadata is None:
                context.oauth_metadata = OAuthMetadata.model_validate(record.server_metadata)
            if record.resource_metadata is not None and context.protected_resource_metadata is None:
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(record.resource_metadata)
        if record.issuer and context.auth_server_url is None:
            context.auth_server_url = record.issuer

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        for attempt in range(2):
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if not self.interactive and outgoing is request and _refused(response):
                        break  # the SDK would start a login here: not in the middle of a run
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
            # Refused: maybe only the access token is stale (revoked, or the server restarted). Refresh once.
            if attempt == 0 and self.context.can_refresh_token():
                self.context.token_expiry_time = 1.0  # long past: the next flow refreshes before it sends
                continue
            self.login_needed = True
            return


def _issuer(context: OAuthContext | None) -> str:
    if context is None:
        return ""
    metadata = context.oauth_metadata
    if metadata is not None and metadata.issuer:
        return str(metadata.issuer)
    return context.auth_server_url or ""


def _dumped(context: OAuthContext | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The discovered authorization-server and protected-resource metadata, as JSON to store."""
    if context is None:
        return None, None
    server, resource = context.oauth_metadata, context.protected_resource_metadata
    return (server.model_dump(mode="json", exclude_none=True) if server is not None else None,
            resource.model_dump(mode="json", exclude_none=True) if resource is not None else None)


def _refused(response: httpx2.Response) -> bool:
    if response.status_code == 401:
        return True
    return response.status_code == 403 and "insufficient_scope" in response.headers.get("www-authenticate", "")


def run_auth(url: str, store: TokenStore | None = None) -> NamiOAuth:
    """The provider an HTTP server's connection uses during a run: the stored login, if any."""
    return NamiOAuth(url, StoredTokens(store or TokenStore(), url))


Model = TypeVar("Model", bound=BaseModel)


def _valid(model: type[Model], stored: Any) -> Model | None:
    """What a token file stored, read back as ``model``; None where it no longer has that shape (a file of
    another version): the login is then asked for again, never a traceback."""
    try:
        return model.model_validate(stored)
    except ValidationError:
        return None
