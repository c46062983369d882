"""The names by which ``nami mcp serve --http`` may be reached: what a request's ``Host`` (and a browser's
``Origin``) must say.

A web page can make a browser send requests to any address, DNS rebinding lets it pick one of this
machine's, and the browser then sends the page's own name as ``Host``. So every request must name an
address the server serves (or a name the user allowed with ``--allow-host``). Bound to loopback, those are
the loopback names; bound to one address, that address; bound to every address (``0.0.0.0``, ``::``), the
machine's interface addresses and its host names. The bearer token of ``--allow-remote`` comes on top.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import socket
import struct
from collections.abc import Iterable
from pathlib import Path

LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def served_names(host: str, allowed: Iterable[str] = ()) -> list[str]:
    """What ``Host`` may name (without the port) for a server bound to ``host``: bracketed for IPv6."""
    bare = host.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:  # bound by name: that name, and what it resolves to
        spellings = [bare, *_resolved(bare)]
    else:
        spellings = machine_names() if address.is_unspecified else [bare, address.compressed]
    if is_loopback(bare):
        spellings = [*LOCAL_NAMES, *spellings]
    shown = [f"[{name.strip('[]')}]" if ":" in name else name for name in [*spellings, *allowed]]
    return list(dict.fromkeys(name.lower() for name in shown))


def _resolved(name: str) -> list[str]:
    try:
        return list(dict.fromkeys(str(info[4][0]) for info in socket.getaddrinfo(name, None)))
    except OSError:
        return []


def machine_names() -> list[str]:
    """Every address of this machine's interfaces (loopback included) and its host names."""
    names = [*LOCAL_NAMES, socket.gethostname(), socket.getfqdn()]
    names += _ipv4_addresses() + _ipv6_addresses()
    with contextlib.suppress(OSError):
        names += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
    return [name for name in dict.fromkeys(names) if name]


def _ipv4_addresses() -> list[str]:
    found: list[str] = []
    try:
        interfaces = socket.if_nameindex()
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        return found
    with probe:
        for _, name in interfaces:
            with contextlib.suppress(OSError):
                packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
                found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _ipv6_addresses() -> list[str]:
    try:
        lines = Path("/proc/net/if_inet6").read_text().splitlines()
    except OSError:
        return []
    return [str(ipaddress.IPv6Address(bytes.fromhex(line.split()[0]))) for line in lines if line.split()]
