"""``nami approvals --url``'s client (approvals/remote.py) against real HTTP servers: the approver's token
goes to the address given and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.approvals.remote import PageClient
from nami_yaml.errors import ConfigError, NamiError
from tests.local_http import QuietHandler, serving

TOKEN = "alice-secret-token-0123456789"


class Elsewhere(QuietHandler):
    """Another server: records the Authorization header of whatever reaches it."""

    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802
        Elsewhere.seen.append(self.headers.get("Authorization"))
        self.reply(200, b'{"approvals": []}', {"Content-Type": "application/json"})


class Redirecting(QuietHandler):
    """A page (or a proxy) that sends the client on to another address."""

    to = ""

    def do_GET(self) -> None:  # noqa: N802
        self.reply(302, b"", {"Location": Redirecting.to + self.path})


def test_a_redirect_is_not_followed_with_the_approvers_token() -> None:
    Elsewhere.seen = []
    with serving(Elsewhere) as elsewhere, serving(Redirecting) as page:
        Redirecting.to = elsewhere
        client = PageClient.of(page, {"NAMI_APPROVER_TOKEN": TOKEN})
        with pytest.raises(NamiError, match="redirected .*--url") as raised:
            client.entries()
    assert elsewhere in str(raised.value)  # where it was sent, so the person can give that address
    assert Elsewhere.seen == []  # the token never reached the other server


@pytest.mark.parametrize("url", ["http://approvals.example.com/", "http://10.0.0.5:8717/", "http://[2001:db8::1]/"])
def test_another_machines_page_is_answered_over_https_only(url: str) -> None:
    with pytest.raises(ConfigError, match="https only"):
        PageClient.of(url, {"NAMI_APPROVER_TOKEN": TOKEN})


@pytest.mark.parametrize("url", ["http://127.0.0.1:8717/", "http://localhost:8717/", "http://[::1]:8717/",
                                 "https://approvals.example.com/"])
def test_this_machines_page_and_https_pages_are_answered(url: str) -> None:
    assert PageClient.of(url, {"NAMI_APPROVER_TOKEN": TOKEN}).token == TOKEN


PAGE_TOKEN = "page-token-from-the-printed-url-0123"


def test_a_token_in_the_url_is_refused_and_the_hint_puts_none_on_a_command_line() -> None:
    """A command line is read by every user of the machine (ps): the page's token never goes there, and the
    hints say where it goes instead."""
    with pytest.raises(ConfigError) as raised:
        PageClient.of(f"http://127.0.0.1:8717/?token={PAGE_TOKEN}", {})
    said = str(raised.value)
    assert PAGE_TOKEN not in said and "--url http://127.0.0.1:8717/ and the token in $NAMI_PAGE_TOKEN" in said
    with pytest.raises(ConfigError) as raised:
        PageClient.of("http://127.0.0.1:8717/", {})
    said = str(raised.value)
    assert "$NAMI_PAGE_TOKEN or in a file given with --token-file FILE, never on the command line" in said
    assert "URL with its ?token=" not in said


def test_the_page_token_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    assert PageClient.of("http://127.0.0.1:8717/", {"NAMI_PAGE_TOKEN": PAGE_TOKEN}).token == PAGE_TOKEN
    file = tmp_path / "token"
    file.write_text(PAGE_TOKEN + "\n")
    file.chmod(0o600)
    assert PageClient.of("http://127.0.0.1:8717/", {}, str(file)).token == PAGE_TOKEN
    with pytest.raises(ConfigError, match="--token-file .*missing"):
        PageClient.of("http://127.0.0.1:8717/", {}, str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="no token in it"):
        PageClient.of("http://127.0.0.1:8717/", {}, str(tmp_path / "empty"))
