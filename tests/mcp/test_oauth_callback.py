"""`nami mcp login`'s callback on 127.0.0.1 against what else can reach it: another user of the machine, or a
web page making the person's browser request it. Only the redirect with the login's own ``state`` counts; a
request made first neither ends the login nor chooses what it says, and a connection left open holds up
nothing. Real `nami mcp login` processes against the SDK's own authorization server (tests/mcp/oauth_server.py)."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from tests.programs import need_mcp

need_mcp()

import httpx2  # noqa: E402

from tests.helpers import NAMI  # noqa: E402
from tests.mcp.test_oauth import approve, finish, paste, project, protected, start_login, token_files  # noqa: E402,F401


def test_a_forged_redirect_before_the_real_one_changes_nothing(protected: tuple[str, Path], workdir: Path,  # noqa: F811
                                                              temp_home: Path) -> None:
    project(workdir, protected[0])
    process, authorize, redirect = start_login(workdir)
    # Before the person approves: a code and a refusal that are not this login's (no state, a wrong one).
    forged = [f"{redirect}?code=forged", f"{redirect}?code=forged&state=guessed",
              f"{redirect}?error=access_denied&error_description=%1b%5B2Jgo+away&state=guessed"]
    answers = [httpx2.get(url) for url in forged]
    assert [answer.status_code for answer in answers] == [404, 404, 404]
    delivered = httpx2.get(approve(authorize))
    code, out, err = finish(process)
    assert code == 0, err
    assert delivered.status_code == 200 and "Logged in to MCP server docs" in out
    assert "\x1b" not in out + err and "go away" not in err
    assert len(token_files(temp_home)) == 1


def test_a_connection_that_sends_nothing_holds_up_no_redirect(protected: tuple[str, Path], workdir: Path,  # noqa: F811
                                                              temp_home: Path) -> None:
    project(workdir, protected[0])
    process, authorize, redirect = start_login(workdir)
    where = urlsplit(redirect)
    with socket.create_connection((where.hostname, where.port)):  # opened, and never a request on it
        delivered = httpx2.get(approve(authorize), timeout=5)
        code, _, err = finish(process)
    assert code == 0, err
    assert delivered.status_code == 200


def test_a_refusal_shows_the_servers_words_without_their_control_characters(
        protected: tuple[str, Path], workdir: Path, temp_home: Path) -> None:  # noqa: F811
    project(workdir, protected[0])
    process, authorize, redirect = start_login(workdir)
    state = authorize.split("state=", 1)[1].split("&", 1)[0]
    code, _, err = paste(process, f"{redirect}?error=access_denied&state={state}"
                                  "&error_description=no%1b%5D0%3Bowned%07+thanks")
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert "the authorization server refused: no\\x1b]0;owned\\x07 thanks" in err
    assert token_files(temp_home) == []


def test_a_login_over_plain_http_to_another_machine_is_refused_before_anything_is_sent(
        workdir: Path, temp_home: Path) -> None:
    project(workdir, "http://mcp.invalid/mcp")  # what a cloned agent.yaml may name
    process = subprocess.run([*NAMI, "mcp", "login", "docs"], cwd=workdir, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60)
    assert process.returncode == 2, process.stderr
    assert "the MCP server's URL http://mcp.invalid/mcp is not https" in process.stderr
    assert "open this URL" not in process.stdout and token_files(temp_home) == []


def test_only_https_or_this_machine_counts_as_safe_for_a_login() -> None:
    from nami_yaml.mcp.login import plain_http

    for url in ("https://mcp.example.com/mcp", "http://127.0.0.1:8080/mcp", "http://127.9.0.1/x",
                "http://[::1]:9000/mcp", "http://localhost/mcp", "http://a.localhost./mcp"):
        assert not plain_http(url), url
    for url in ("http://mcp.example.com/mcp", "http://10.0.0.5/mcp", "http://[::ffff:8.8.8.8]/",
                "ftp://127.0.0.1/", "http:///mcp"):
        assert plain_http(url), url
