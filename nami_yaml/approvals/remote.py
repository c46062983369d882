"""``nami approvals --url URL``: the queue answered through an approvals page (``nami approvals serve``,
usually a team's, behind its proxy) rather than in a folder of this machine. Each request carries
``Authorization: Bearer`` with the named approver's token (``$NAMI_APPROVER_TOKEN``), or, for a page of this
machine, the page token of the URL it printed, given in ``$NAMI_PAGE_TOKEN`` or a file (``--token-file``).
Never on the command line: every user of the machine reads command lines (ps, /proc), so a ``--url`` holding
``?token=`` is refused. Nothing here prints."""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.approvals.store import ApprovalRefused
from nami_yaml.errors import ConfigError, NamiError

TIMEOUT = 60.0  # an answer waits for the run's receipt (up to 30 s) before the page replies
PAGE_TOKEN_ENV = "NAMI_PAGE_TOKEN"
TOKEN_HINT = (f"${PAGE_TOKEN_ENV} or in a file given with --token-file FILE, never on the command line "
              "(`read -rs NAMI_PAGE_TOKEN; export NAMI_PAGE_TOKEN` asks for it without echo)")
MAX_TOKEN_FILE = 4096


def read_token(path: str) -> str:
    """The token in the file at ``path`` (its first line); ConfigError when it cannot be read."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_TOKEN_FILE + 1)
    except OSError as exc:
        raise ConfigError(f"--token-file {path}: {exc.strerror or exc}") from None
    token = raw.decode("utf-8", "replace").strip().split("\n", 1)[0].strip() if len(raw) <= MAX_TOKEN_FILE else ""
    if not token:
        raise ConfigError(f"--token-file {path}: no token in it (its first line is the token)")
    return token


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would send the approver's token (Authorization) on to wherever the
    redirect points, another host or plain http included. The 3xx is said instead, with where it points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class PageClient:
    base: str  # scheme://host[:port][/prefix], without a trailing slash
    token: str

    @classmethod
    def of(cls, url: str, env: Mapping[str, str], token_file: str | None = None) -> PageClient:
        parts = urllib.parse.urlsplit(url)
        if urllib.parse.parse_qs(parts.query).get("token"):
            where = f"{parts.scheme}://{parts.netloc}{parts.path}"
            raise ConfigError(f"--url holds the page's token (?token=…): a command line is read by every user of "
                              f"this machine (ps, /proc). Give --url {where} and the token in {TOKEN_HINT}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"--url {url!r}: give the page's address, e.g. https://approvals.example.com/")
        if parts.scheme == "http" and not _loopback(parts.hostname or ""):
            # the approver's token is a bearer secret: in plain http anyone on the way reads it, and answers
            raise ConfigError(f"--url {url!r}: another machine's page is answered over https only (your token "
                              "would cross the network in clear); the page is served behind a TLS proxy")
        token = env.get("NAMI_APPROVER_TOKEN") or env.get(PAGE_TOKEN_ENV) or (
            read_token(token_file) if token_file else "")
        if not token:
            raise ConfigError("--url needs your approver token in $NAMI_APPROVER_TOKEN, or, for a page of this "
                              f"machine, the page's token (the URL's ?token=…) in {TOKEN_HINT}")
        return cls(f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}", token)

    def entries(self, *, show_all: bool = False) -> list[dict[str, Any]]:
        found = self._request("GET", "/api/approvals" + ("?all=1" if show_all else ""))
        return list(found.get("approvals") or [])

    def entry(self, approval_id: str) -> dict[str, Any]:
        return self._request("GET", f"/api/approvals/{urllib.parse.quote(approval_id, safe='')}")

    def answer(self, approval_id: str, *, approve: bool, reason: str | None) -> str:
        verb = "approve" if approve else "deny"
        done = self._request("POST", f"/api/approvals/{urllib.parse.quote(approval_id, safe='')}/{verb}",
                             {"reason": reason})
        return str(done.get("message") or "taken")

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json",
                   **({"Content-Type": "application/json"} if data is not None else {})}
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with _OPENER.open(request, timeout=TIMEOUT) as response:  # the URL given, never a redirect's
                return _json(response.read())
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise NamiError(f"the approvals page at {self.base} redirected (HTTP {exc.code}) to "
                                f"{exc.headers.get('Location')!r}: your token is not sent on; give that address "
                                "with --url if it is the page") from None
            said = _json(exc.read()).get("error") or exc.reason
            if exc.code in (401, 403, 404, 409):
                raise ApprovalRefused(f"the approvals page refused it (HTTP {exc.code}): {said}") from None
            raise NamiError(f"the approvals page at {self.base} failed (HTTP {exc.code}): {said}") from None
        except (OSError, ValueError) as exc:
            raise NamiError(f"the approvals page at {self.base} cannot be reached: "
                            f"{getattr(exc, 'reason', None) or exc}") from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _json(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
