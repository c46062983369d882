"""Where ``nami mcp login`` keeps an HTTP MCP server's OAuth tokens and the client it registered: nami's state
folder, ``mcp-auth/``, private to the user (folders 0700, files 0600), each record written atomically.

A record is found by the server's URL and the authorization server (issuer) that granted it: one folder per
URL, one file per issuer in it. Never by the server's name in agent.yaml, which a cloned repository chooses:
a project that calls its server ``github`` gets nothing logged in for another URL. Nothing here imports the
MCP SDK (``nami mcp logout`` needs none); the SDK's token models are made from these dicts in ``oauth.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from nami_yaml.xdg import default_state_dir

FOLDER = "mcp-auth"
VERSION = 1


def canonical_url(url: str) -> str:
    """The URL as records are keyed by it: scheme and host in lower case, no fragment, no trailing slash."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass
class AuthRecord:
    """What one login left: the tokens (``access_token``, ``refresh_token``, …) as the server sent them, when
    the access token expires (seconds since the epoch; None: not said), and the registered client."""

    url: str
    issuer: str
    tokens: dict[str, Any] | None = None
    expires_at: float | None = None
    client_info: dict[str, Any] | None = None
    # The authorization server's metadata and the server's protected-resource metadata found at login: a run
    # refreshes at that token endpoint (an authorization server elsewhere than the MCP server's origin),
    # never at a guess on the MCP server, which must not see the refresh token.
    server_metadata: dict[str, Any] | None = None
    resource_metadata: dict[str, Any] | None = None
    saved_at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "url": self.url, "issuer": self.issuer, "tokens": self.tokens,
                "expires_at": self.expires_at, "client_info": self.client_info,
                "server_metadata": self.server_metadata, "resource_metadata": self.resource_metadata,
                "saved_at": self.saved_at}


class TokenStore:
    """The records under ``root`` (default: ``$XDG_STATE_HOME/nami/mcp-auth``)."""

    def __init__(self, root: Path | None = None):
        self.root = root if root is not None else default_state_dir() / FOLDER

    def folder(self, url: str) -> Path:
        return self.root / _digest(canonical_url(url))

    def path(self, url: str, issuer: str) -> Path:
        return self.folder(url) / f"{_digest(issuer)}.json"

    def load(self, url: str) -> AuthRecord | None:
        """The newest record for ``url`` (the last login, whichever issuer granted it); None if there is none
        or it cannot be read (a broken file is as good as none: log in again)."""
        records = []
        for path in sorted(self.folder(url).glob("*.json")) if self.folder(url).is_dir() else ():
            record = _read(path)
            if record is not None and record.url == canonical_url(url):
                records.append(record)
        return max(records, key=lambda r: r.saved_at, default=None)

    def save(self, record: AuthRecord) -> Path:
        """Write ``record`` atomically (the old one whole, or the new one whole) with mode 0600."""
        record.url = canonical_url(record.url)
        record.saved_at = time.time()
        target = self.path(record.url, record.issuer)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        target.parent.mkdir(mode=0o700, exist_ok=True)
        for folder in (self.root, target.parent):
            os.chmod(folder, 0o700)  # made earlier by someone with another umask: still only the user's
        fd, temporary = tempfile.mkstemp(prefix=".token.", suffix=".tmp", dir=target.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record.to_json(), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return target

    def remove(self, url: str) -> int:
        """Forget every record for ``url``; how many there were."""
        folder = self.folder(url)
        if not folder.is_dir():
            return 0
        count = len(list(folder.glob("*.json")))
        shutil.rmtree(folder)
        return count


def _read(path: Path) -> AuthRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("url"), str):
        return None
    expires = data.get("expires_at")
    return AuthRecord(url=data["url"], issuer=str(data.get("issuer") or ""),
                      tokens=_mapping(data.get("tokens")),
                      expires_at=float(expires) if isinstance(expires, (int, float)) else None,
                      client_info=_mapping(data.get("client_info")), server_metadata=_mapping(data.get("server_metadata")),
                      resource_metadata=_mapping(data.get("resource_metadata")),
                      saved_at=float(data.get("saved_at") or 0))


def _mapping(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None
