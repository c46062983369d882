"""The address policy as pure functions: host parsing, IP classification, allow list, check_url."""

from __future__ import annotations

import ipaddress
import socket
import time
from typing import Any

import pytest

from nami_yaml.builtins.netguard import (
    ALLOW_HINT,
    BlockedURL,
    check_url,
    classify_ip,
    connect_form,
    is_allowed,
    normalize_host,
    parse_allow_entry,
    parse_legacy_ipv4,
    resolve,
)

ip = ipaddress.ip_address


def fixed_resolver(*answers: str) -> Any:
    """A getaddrinfo stand-in: DNS answers are the one thing a test cannot choose for real."""

    def lookup(host: str, port: int, family: int = 0, type: int = 0) -> list[tuple[Any, ...]]:
        infos = []
        for text in answers:
            address = ip(text)
            fam = socket.AF_INET6 if address.version == 6 else socket.AF_INET
            sockaddr = (text, port, 0, 0) if fam == socket.AF_INET6 else (text, port)
            infos.append((fam, socket.SOCK_STREAM, 6, "", sockaddr))
        return infos

    return lookup


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("1.16777215", "1.255.255.255"),
    ],
)
def test_legacy_ipv4_spellings_parse_like_inet_aton(spelling: str, expected: str) -> None:
    assert parse_legacy_ipv4(spelling) == ip(expected)


@pytest.mark.parametrize("name", ["example.com", "localhost", "a1.b2", "0x7f.example", "x", "1.2.3.4.nip.io"])
def test_names_that_do_not_end_in_a_number_are_not_addresses(name: str) -> None:
    assert parse_legacy_ipv4(name) is None


@pytest.mark.parametrize("bad", ["1.2.3.4.5", "foo.123", "1.2.3.256", "1.16777216", "4294967296", "08.0.0.1",
                                 "1_0.0.0.1", "0x1g.0.0.1", "1..1"])
def test_malformed_numeric_hosts_are_refused_rather_than_guessed(bad: str) -> None:
    with pytest.raises(BlockedURL):
        parse_legacy_ipv4(bad)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Example.COM.", "example.com"),
        ("%31%32%37.0.0.1", ip("127.0.0.1")),
        ("１２７.０.０.１", ip("127.0.0.1")),  # full-width digits fold under IDNA
        ("[::1]", ip("::1")),
        ("::ffff:127.0.0.1", ip("::ffff:127.0.0.1")),
        ("bücher.example", "xn--bcher-kva.example"),
        ("LOCALHOST", "localhost"),
    ],
)
def test_normalize_host(raw: str, expected: object) -> None:
    assert normalize_host(raw) == expected


@pytest.mark.parametrize("raw", ["fe80::1%eth0", "fe80::1%25eth0", "exa mple.com", "a..b", "-x-.com", "[::zz]", ""])
def test_normalize_host_refuses_zone_ids_and_junk(raw: str) -> None:
    with pytest.raises(BlockedURL):
        normalize_host(raw)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("fec0::1", "site-local"),
        ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, a loopback"),
        ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, a private"),
        ("::127.0.0.1", "IPv4-compatible form of 127.0.0.1"),
        ("::8.8.8.8", "IPv4-compatible form of 8.8.8.8 (a deprecated"),
        ("2002:808:808::1", "6to4 form of 8.8.8.8 (a deprecated"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo form of"),
        ("2002:7f00:1::", "6to4 form of 127.0.0.1"),
        ("2002:a9fe:a9fe::", "6to4 form of 169.254.169.254"),
        ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1"),
        ("64:ff9b::a00:1", "NAT64 form of 10.0.0.1"),
        ("64:ff9b:1::1", "local-use NAT64"),
        ("2001:db8::1", "private"),
    ],
)
def test_classify_refuses_internal_addresses(address: str, reason: str) -> None:
    found = classify_ip(ip(address))
    assert found is not None and reason in found


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111",
                                     "::ffff:8.8.8.8", "64:ff9b::808:808"])
def test_classify_lets_public_addresses_through(address: str) -> None:
    assert classify_ip(ip(address)) is None


def test_ipv4_mapped_addresses_are_dialled_as_ipv4() -> None:
    assert connect_form(ip("::ffff:8.8.8.8")) == ip("8.8.8.8")
    assert connect_form(ip("2606:4700:4700::1111")) == ip("2606:4700:4700::1111")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("localhost", ("localhost", None)),
        ("Grafana.Internal.", ("grafana.internal", None)),
        ("grafana.internal:3000", ("grafana.internal", 3000)),
        ("10.0.0.5", (ip("10.0.0.5"), None)),
        ("[fd00::5]:8443", (ip("fd00::5"), 8443)),
        ("fd00::5", (ip("fd00::5"), None)),
    ],
)
def test_parse_allow_entry(entry: str, expected: tuple[object, int | None]) -> None:
    assert parse_allow_entry(entry) == expected


@pytest.mark.parametrize("entry", ["host:0", "host:99999", "host:abc", "[fd00::5", "[fd00::5]x", "a b"])
def test_parse_allow_entry_rejects_malformed(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_allow_entry(entry)


def test_is_allowed_matches_name_and_optional_port_exactly() -> None:
    allow = ["grafana.internal:3000", "Vault.Internal"]
    assert is_allowed("grafana.internal", 3000, allow)
    assert not is_allowed("grafana.internal", 443, allow)
    assert is_allowed("vault.internal", 8200, allow)
    assert not is_allowed("x.vault.internal", 8200, allow)  # exact, no implicit subdomains
    assert is_allowed(ip("127.0.0.1"), 80, ["127.1"])  # the same address, spelled differently


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://127.0.0.1:70/", "only http and https"),
        ("//example.com/", "relative URL"),
        ("http:///path", "no host"),
        ("http://example.com:0/", "port 0"),
        ("http://example.com:99999/", "malformed"),
        ("http://127.0.0.1\\@example.com/", "backslash"),
        ("http://exa mple.com/", "whitespace"),
        ("http://[fe80::1%25eth0]/", "zone id"),
    ],
)
def test_check_url_refuses_unsupported_urls_without_the_allow_hint(url: str, message: str) -> None:
    with pytest.raises(BlockedURL) as info:
        check_url(url, resolver=fixed_resolver("8.8.8.8"))
    assert message in str(info.value)
    assert ALLOW_HINT not in str(info.value)


def test_check_url_uses_the_real_host_after_userinfo() -> None:
    with pytest.raises(BlockedURL, match="127.0.0.1 is a loopback address"):
        check_url("http://example.com:80@127.0.0.1/", resolver=fixed_resolver("8.8.8.8"))


def test_check_url_refuses_when_any_resolved_address_is_internal() -> None:
    with pytest.raises(BlockedURL) as info:
        check_url("https://rebind.example/", resolver=fixed_resolver("8.8.8.8", "10.0.0.5"))
    assert "rebind.example resolves to 10.0.0.5, a private address" in str(info.value)
    assert ALLOW_HINT in str(info.value)


def test_check_url_returns_the_checked_addresses_to_dial() -> None:
    target = check_url("https://Docs.Example.:8443/a/b?q=1#frag",
                       resolver=fixed_resolver("8.8.8.8", "::ffff:1.1.1.1", "8.8.8.8"))
    assert (target.scheme, target.host, target.port) == ("https", "docs.example", 8443)
    assert target.addresses == ("8.8.8.8", "1.1.1.1")
    assert target.request_target == "/a/b?q=1"
    assert not target.allowed and not target.internal


def test_allowed_host_may_resolve_to_private_addresses() -> None:
    target = check_url("http://grafana.internal:3000/", ["grafana.internal"], resolver=fixed_resolver("10.1.2.3"))
    assert target.addresses == ("10.1.2.3",) and target.allowed and target.internal
    with pytest.raises(BlockedURL, match="private"):
        check_url("http://grafana.internal:3000/", ["grafana.internal:80"], resolver=fixed_resolver("10.1.2.3"))


def test_localhost_names_are_refused_before_any_lookup() -> None:
    def must_not_resolve(*args: Any) -> Any:
        raise AssertionError("resolver called for a localhost name")

    for url in ("http://localhost/", "http://LocalHost./", "http://api.localhost:8080/"):
        with pytest.raises(BlockedURL, match="loopback name"):
            check_url(url, resolver=must_not_resolve)


def test_resolution_failures_and_slow_resolvers() -> None:
    def failing(*args: Any) -> Any:
        raise socket.gaierror(-2, "Name or service not known")

    with pytest.raises(BlockedURL, match="cannot resolve nowhere.example"):
        check_url("http://nowhere.example/", resolver=failing)

    def slow(*args: Any) -> Any:
        time.sleep(3)
        return fixed_resolver("8.8.8.8")(*args)

    with pytest.raises(TimeoutError):
        resolve("slow.example", 80, timeout=0.2, resolver=slow)


def test_resolve_uses_the_system_resolver_by_default() -> None:
    # /etc/hosts always maps localhost to a loopback address, so this needs no network.
    found = resolve("localhost", 80, timeout=10)
    assert found and all(address.is_loopback for address in found)
