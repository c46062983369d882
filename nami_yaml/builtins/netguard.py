"""Address policy for fetch_url: which URLs may be fetched, and which IP to connect to.

The host is parsed the way browsers and curl would parse it (legacy IPv4 spellings, IPv6
literals, percent-encoding, IDNA), every address a name resolves to is checked, and the checked
address is handed back so the caller connects to exactly that address (no second DNS lookup that
a rebinding attacker could answer differently).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., Sequence[Any]]

SCHEMES = {"http": 80, "https": 443}
ALLOW_HINT = "add the host to tools.fetch_url.allow_hosts in agent.yaml if this is intended"

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$")
_HEX = set("0123456789abcdefABCDEF")
_OCT = set("01234567")
_DEC = set("0123456789")


class BlockedURL(ValueError):
    """The URL may not be fetched. ``hint`` says whether the allow list could change that."""

    def __init__(self, message: str, *, hint: bool = False):
        self.hint = hint
        super().__init__(f"{message}; {ALLOW_HINT}" if hint else message)


@dataclass(frozen=True)
class Target:
    """A checked URL: connect to one of ``addresses``, but speak HTTP/TLS to ``host``."""

    url: str
    scheme: str
    host: str  # canonical name (IDNA, lower case, no trailing dot) or IP text; Host header and SNI
    port: int
    addresses: tuple[str, ...]  # every one of them passed the policy (or the host is allow-listed)
    allowed: bool = False  # matched fetch_allow_hosts
    internal: bool = False  # at least one address is not public (only possible when allowed)

    @property
    def request_target(self) -> str:
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


# --- host parsing -----------------------------------------------------------------------------

def _ipv4_number(part: str) -> int | None:
    """One dotted part as inet_aton/WHATWG read it: 0x.. hex, leading-zero octal, else decimal."""
    if part[:2] in ("0x", "0X"):
        digits, base, allowed = part[2:], 16, _HEX
    elif len(part) > 1 and part[0] == "0":
        digits, base, allowed = part[1:], 8, _OCT
    else:
        digits, base, allowed = part, 10, _DEC
    if digits == "":
        return 0 if base != 10 else None
    # int() alone would also accept "1_0" and non-ASCII digits, which no resolver does.
    if not set(digits) <= allowed:
        return None
    return int(digits, base)


def _ends_in_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    return bool(last) and (set(last) <= _DEC or (last[:2] in ("0x", "0X") and _ipv4_number(last) is not None))


def parse_legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``127.1``, ``0x7f000001``, ``2130706433``, ``0177.0.0.1`` -> 127.0.0.1; None if not numeric.

    Raises BlockedURL when the host ends in a number but is not a valid address, because a
    resolver would then guess, and the guess is what an attacker relies on.
    """
    if not _ends_in_number(host):
        return None
    parts = host.split(".")
    if parts[-1] == "":
        parts.pop()
    numbers = [_ipv4_number(p) for p in parts] if len(parts) <= 4 else [None]
    if any(n is None for n in numbers):
        raise BlockedURL(f"{host!r} is neither a host name nor a valid IPv4 address")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise BlockedURL(f"{host!r} is an out-of-range IPv4 address")
    value = values[-1]
    for i, n in enumerate(values[:-1]):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def normalize_host(raw: str) -> str | IPAddress:
    """A URL's host as a canonical name, or an IP address if it spells one in any form."""
    host = unquote(raw).strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        if "%" in host:
            raise BlockedURL(f"{host!r} has an IPv6 zone id, which only names link-local interfaces")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise BlockedURL(f"{host!r} is not a valid IPv6 address") from None
    if not host.isascii():
        try:
            # IDNA nameprep also folds full-width digits, so "１２７.０.０.１" becomes 127.0.0.1.
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise BlockedURL(f"{raw!r} is not a valid international host name") from None
    host = host.lower()
    legacy = parse_legacy_ipv4(host)
    if legacy is not None:
        return legacy
    name = host[:-1] if host.endswith(".") else host
    if not name or len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        raise BlockedURL(f"{raw!r} is not a valid host name")
    return name


# --- address classification -------------------------------------------------------------------

def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    if ip.ipv4_mapped is not None:
        return "an IPv4-mapped form of", ip.ipv4_mapped
    if ip in _NAT64_WELL_KNOWN:
        return "a NAT64 form of", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "a 6to4 form of", ip.sixtofour
    if ip.teredo is not None:
        return "a Teredo form of", ip.teredo[1]
    if int(ip) >> 32 == 0 and int(ip) > 1:
        return "an IPv4-compatible form of", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def classify_ip(ip: IPAddress) -> str | None:
    """Why ``ip`` must not be fetched (e.g. "a loopback address"), or None if it is public."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return "a scoped (zone id) address"
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            how, v4 = embedded
            inner = classify_ip(v4)
            if inner is not None:
                return f"{how} {v4}, {inner}"
            if how in ("an IPv4-compatible form of", "a 6to4 form of", "a Teredo form of"):
                # Deprecated tunnels: refused alike on every Python, whose is_global verdicts differ.
                return f"{how} {v4} (a deprecated tunnel address)"
            if how in ("an IPv4-mapped form of", "a NAT64 form of"):
                # The packet goes to the embedded public IPv4 address, so that is what counts.
                return None
        if ip in _NAT64_LOCAL:
            return "a local-use NAT64 address"
    if ip in _METADATA:
        return "a link-local address (the cloud metadata service)"
    checks: list[tuple[bool, str]] = [
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT, "a shared (carrier-grade NAT) address"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "a site-local address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "not a globally routable address"),
    ]
    return next((reason for hit, reason in checks if hit), None)


def connect_form(ip: IPAddress) -> IPAddress:
    """The address to actually dial: an IPv4-mapped literal is dialled as plain IPv4."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


# --- allow list ----------------------------------------------------------------------------------

def parse_allow_entry(entry: str) -> tuple[str | IPAddress, int | None]:
    """``host``, ``host:port``, ``[v6]``, ``[v6]:port`` or a bare IPv6 literal -> (host, port)."""
    text = entry.strip()
    port: str | None = None
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"allow_hosts entry {entry!r} is malformed")
        port = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host = text
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"allow_hosts entry {entry!r} has an invalid port")
    try:
        return normalize_host(host), int(port) if port is not None else None
    except BlockedURL as exc:
        raise ValueError(f"allow_hosts entry {entry!r}: {exc}") from None


def is_allowed(host: str | IPAddress, port: int, allow_hosts: Iterable[str]) -> bool:
    for entry in allow_hosts:
        allowed_host, allowed_port = parse_allow_entry(entry)
        if allowed_host == host and allowed_port in (None, port):
            return True
    return False


# --- resolution ----------------------------------------------------------------------------------

def resolve(host: str, port: int, *, timeout: float | None = None,
            resolver: Resolver | None = None) -> list[IPAddress]:
    """Every address ``host`` resolves to, de-duplicated in resolver order, within ``timeout``."""
    lookup = resolver or socket.getaddrinfo
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["infos"] = lookup(host, port, 0, socket.SOCK_STREAM)
        except Exception as exc:  # handed to the caller's thread below
            box["error"] = exc

    # getaddrinfo has no timeout of its own; a daemon thread bounds how long we wait for it.
    worker = threading.Thread(target=run, name="nami-fetch-dns", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"resolving {host} took longer than {timeout:g}s")
    if "error" in box:
        raise BlockedURL(f"cannot resolve {host}: {box['error']}")
    found: list[IPAddress] = []
    for info in box["infos"]:
        # Link-local IPv6 answers carry "%zone"; ip_address keeps it, classify_ip refuses it.
        ip = ipaddress.ip_address(str(info[4][0]))
        if ip not in found:
            found.append(ip)
    if not found:
        raise BlockedURL(f"cannot resolve {host}: no addresses")
    return found


def check_url(url: str, allow_hosts: Iterable[str] = (), *, timeout: float | None = None,
              resolver: Resolver | None = None) -> Target:
    """Validate scheme, host and every resolved address of ``url``; raise BlockedURL if refused."""
    if any(c.isspace() or ord(c) < 0x20 or c in "\\\x7f" for c in url):
        raise BlockedURL("the URL contains whitespace, control characters or a backslash; percent-encode them")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BlockedURL(f"the URL is malformed ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise BlockedURL(f"only http and https URLs can be fetched, not {scheme or 'a relative URL'}")
    # The host is what follows the last "@": "http://evil.com@127.0.0.1/" goes to 127.0.0.1.
    host_port = parts.netloc.rpartition("@")[2]
    if host_port.startswith("["):
        raw_host = host_port[: host_port.find("]") + 1]
    else:
        raw_host = host_port.partition(":")[0]
    if not raw_host:
        raise BlockedURL("the URL has no host")
    if port == 0:
        raise BlockedURL("port 0 cannot be fetched")
    port = port or SCHEMES[scheme]
    host = normalize_host(raw_host)
    allowed = is_allowed(host, port, allow_hosts)
    if isinstance(host, str):
        if not allowed and (host == "localhost" or host.endswith(".localhost")):
            raise BlockedURL(f"{host} is a loopback name", hint=True)
        addresses = resolve(host, port, timeout=timeout, resolver=resolver)
    else:
        addresses = [host]
    internal = False
    for ip in addresses:
        reason = classify_ip(ip)
        if reason is None:
            continue
        internal = True
        if not allowed:
            subject = str(ip) if ip == host else f"{host} resolves to {ip},"
            verb = "is " if ip == host else ""
            raise BlockedURL(f"{subject} {verb}{reason}", hint=True)
    host_text = host if isinstance(host, str) else str(connect_form(host))
    dial = tuple(dict.fromkeys(str(connect_form(ip)) for ip in addresses))
    return Target(url=url, scheme=scheme, host=host_text, port=port, addresses=dial,
                  allowed=allowed, internal=internal)
