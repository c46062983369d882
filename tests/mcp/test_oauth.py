"""OAuth for HTTP MCP servers: `nami mcp login` against a server on 127.0.0.1 that uses the official SDK's own
authorization-server support (tests/mcp/oauth_server.py), driven end to end without a browser (the test plays
the person: it follows the authorization URL, whose endpoint approves at once), then runs that use the stored
login, refresh it, are told to log in again after a 401, and `nami mcp logout`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

import anyio  # noqa: E402
import httpx2  # noqa: E402

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls  # noqa: E402
from tests.helpers import NAMI, run_nami  # noqa: E402

SERVER = Path(__file__).with_name("oauth_server.py")


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The protected server as a real process: its MCP URL, and the file where it says how many refreshes
    and registrations it saw."""
    state = tmp_path / "server-state.json"
    process = subprocess.Popen([sys.executable, str(SERVER), "--state", str(state)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url + (process.stderr.read() if process.stderr else "")
        yield url, state
    finally:
        process.kill()
        process.wait()


def project(workdir: Path, url: str) -> None:
    (workdir / "agent.yaml").write_text(f"mcp_servers:\n  docs:\n    url: {url}\n"
                                        "rules:\n  - tool: docs__*\n    decision: allow\n")
    trusted = run_nami(None, "trust", "--yes", cwd=workdir)
    assert trusted.returncode == 0, trusted.stderr


def start_login(workdir: Path) -> tuple[subprocess.Popen[str], str, str]:
    """`nami mcp login docs` as a real process, up to the URL it says to open: (process, URL, redirect)."""
    process = subprocess.Popen([*NAMI, "mcp", "login", "docs"], cwd=workdir, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout is not None
    seen = []
    while True:
        line = process.stdout.readline()
        assert line, "".join(seen) + (process.stderr.read() if process.stderr else "")
        seen.append(line)
        if line.startswith("  http"):
            authorize = line.strip()
            break
    waits = process.stdout.readline() + process.stdout.readline() + process.stdout.readline()
    redirect = waits.split("come back to ", 1)[1].split(".\n", 1)[0]
    assert "Logged in over SSH" in waits and "paste it here" in waits  # both ways are said
    return process, authorize, redirect


def approve(authorize: str) -> str:
    """What the person's browser does at the authorization endpoint: it approves; the redirect's address."""
    response = httpx2.get(authorize, follow_redirects=False)
    assert response.status_code == 302, response.text
    return response.headers["location"]


def paste(process: subprocess.Popen[str], line: str) -> tuple[int, str, str]:
    """The person pastes ``line`` at the login's prompt; how the login ended."""
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()
    return finish(process)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def token_files(home: Path) -> list[Path]:
    return sorted((home / ".local" / "state" / "nami" / "mcp-auth").glob("*/*.json"))


def whoami_run(server: FakeOpenAIServer, workdir: Path) -> subprocess.CompletedProcess[str]:
    server.add(tool_calls(call("docs__whoami", {})), text("done"))
    return run_nami(server, "run", "who am I?", cwd=workdir)


def tool_answers(server: FakeOpenAIServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def test_login_through_the_local_callback_then_a_run_uses_the_server(
        protected: tuple[str, Path], workdir: Path, temp_home: Path, fake_openai: FakeOpenAIServer) -> None:
    url, _ = protected
    project(workdir, url)
    process, authorize, redirect = start_login(workdir)
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")
    location = approve(authorize)
    assert location.startswith(redirect + "?")
    delivered = httpx2.get(location)  # the browser follows the redirect to nami's callback
    code, out, err = finish(process)
    assert code == 0, err
    assert delivered.status_code == 200 and "login is done" in delivered.text
    assert "Logged in to MCP server docs" in out and "offers 2 tools" in out
    [stored] = token_files(temp_home)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(stored.parent.parent.stat().st_mode) == 0o700
    record = json.loads(stored.read_text())
    access = record["tokens"]["access_token"]
    assert record["url"] == url and record["issuer"].startswith(url.rsplit("/mcp", 1)[0])
    assert "docs" not in stored.name and "docs" not in stored.parent.name  # keyed by URL and issuer, never the name

    result = whoami_run(fake_openai, workdir)
    assert result.returncode == 0, result.stderr
    [answer] = tool_answers(fake_openai)
    assert answer.startswith("client "), answer + result.stderr
    # The tokens are nowhere but their own file: not in the run's output, sessions, audit log, server logs or
    # anything else written in the home folder or the project.
    secrets = [access.encode(), record["tokens"]["refresh_token"].encode()]
    written = [path for folder in (temp_home, workdir) for path in folder.rglob("*") if path.is_file()]
    assert any("audit" in path.name for path in written) and any(path.suffix == ".jsonl" for path in written)
    for path in written:
        if path != stored:
            assert not any(secret in path.read_bytes() for secret in secrets), path
    assert not any(secret.decode() in result.stdout + result.stderr + out + err for secret in secrets)


def test_login_over_ssh_takes_the_redirect_pasted_back(protected: tuple[str, Path], workdir: Path,
                                                      temp_home: Path) -> None:
    project(workdir, protected[0])
    process, authorize, _ = start_login(workdir)
    code, out, err = paste(process, approve(authorize))  # the browser elsewhere could not load it: pasted instead
    assert code == 0, err
    assert "Logged in to MCP server docs" in out
    assert len(token_files(temp_home)) == 1


def test_a_refused_login_says_so_and_stores_nothing(protected: tuple[str, Path], workdir: Path,
                                                    temp_home: Path) -> None:
    project(workdir, protected[0])
    process, authorize, redirect = start_login(workdir)
    state = authorize.split("state=", 1)[1].split("&", 1)[0]
    code, _, err = paste(process, f"{redirect}?error=access_denied&error_description=the+person+said+no&state={state}")
    assert code == 2
    assert "the authorization server refused: the person said no" in err and "Traceback" not in err
    assert token_files(temp_home) == []


def login(workdir: Path) -> Path:
    process, authorize, _ = start_login(workdir)
    httpx2.get(approve(authorize))
    code, _, err = finish(process)
    assert code == 0, err
    return workdir


def test_an_expired_token_is_refreshed_and_the_new_one_stored(
        protected: tuple[str, Path], workdir: Path, temp_home: Path, fake_openai: FakeOpenAIServer) -> None:
    url, state = protected
    project(workdir, url)
    login(workdir)
    [stored] = token_files(temp_home)
    record = json.loads(stored.read_text())
    record["expires_at"] = 1.0  # long past
    stored.write_text(json.dumps(record))
    result = whoami_run(fake_openai, workdir)
    assert result.returncode == 0, result.stderr
    assert tool_answers(fake_openai)[0].startswith("client ")
    assert json.loads(state.read_text())["refreshed"] == 1
    renewed = json.loads(stored.read_text())
    assert renewed["tokens"]["access_token"] != record["tokens"]["access_token"]
    assert renewed["expires_at"] > 1.0 and stat.S_IMODE(stored.stat().st_mode) == 0o600


def test_a_401_mid_run_says_to_log_in_and_logout_forgets_the_tokens(
        protected: tuple[str, Path], workdir: Path, temp_home: Path, fake_openai: FakeOpenAIServer) -> None:
    url, _ = protected
    project(workdir, url)
    login(workdir)
    # The server forgets every token (revoked); the next call is refused, and a refresh cannot help.
    fake_openai.add(tool_calls(call("docs__revoke", {})), tool_calls(call("docs__whoami", {})), text("done"))
    result = run_nami(fake_openai, "run", "revoke, then who am I?", cwd=workdir)
    assert result.returncode == 0, result.stderr
    revoked, refused = tool_answers(fake_openai)
    assert revoked == "revoked"
    assert refused.startswith("Error: MCP server docs refused the request") and "`nami mcp login docs`" in refused
    assert "run `nami mcp login docs`" in result.stderr and "Traceback" not in result.stderr

    out = run_nami(None, "mcp", "logout", "docs", cwd=workdir)
    assert out.returncode == 0, out.stderr
    assert "Logged out of MCP server docs" in out.stdout
    assert token_files(temp_home) == []
    result = whoami_run(fake_openai, workdir)
    assert result.returncode == 0, result.stderr
    assert "MCP server docs (agent.yaml:2:3) did not start: it asks for an OAuth login: run `nami mcp login docs`" \
        in result.stderr
    assert "Traceback" not in result.stderr
    again = run_nami(None, "mcp", "logout", "docs", cwd=workdir)
    assert "nami holds no login for MCP server docs" in again.stdout


def test_login_to_a_stdio_server_or_an_unknown_one_is_a_clear_error(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("mcp_servers:\n  local:\n    command: some-server\n")
    stdio = run_nami(None, "mcp", "login", "local", cwd=workdir)
    unknown = run_nami(None, "mcp", "logout", "nope", cwd=workdir)
    assert stdio.returncode == 2 and "a command nami starts (stdio): it has no login" in stdio.stderr
    assert unknown.returncode == 2 and "no MCP server 'nope' (its mcp_servers: local)" in unknown.stderr


def test_a_run_refreshes_at_the_token_endpoint_found_at_login_not_at_the_mcp_servers_origin(
        protected: tuple[str, Path], workdir: Path, temp_home: Path) -> None:
    url, _ = protected
    project(workdir, url)
    login(workdir)
    [stored] = token_files(temp_home)
    record = json.loads(stored.read_text())
    assert record["server_metadata"]["token_endpoint"] == url.rsplit("/mcp", 1)[0] + "/token"
    # An authorization server elsewhere (as most are): the refresh token goes there, never to the MCP server.
    record["server_metadata"]["token_endpoint"] = "https://auth.example.com/oauth/token"
    record["expires_at"] = 1.0
    stored.write_text(json.dumps(record))

    from nami_yaml.mcp.oauth import run_auth

    provider = run_auth(url)
    anyio.run(provider._initialize)
    refresh = anyio.run(provider._refresh_token)
    assert not provider.context.is_token_valid() and provider.context.can_refresh_token()
    assert str(refresh.url) == "https://auth.example.com/oauth/token"


def test_a_stored_login_of_another_shape_is_asked_for_again_not_a_traceback(tmp_path: Path) -> None:
    """A token file written by another version (its tokens or client no longer the SDK's shape) reads as no
    login: the person is asked to log in again."""
    from nami_yaml.mcp.oauth import StoredTokens
    from nami_yaml.mcp.token_store import AuthRecord, TokenStore

    url = "https://mcp.example.com/mcp"
    store = TokenStore(tmp_path / "auth")
    store.save(AuthRecord(url=url, issuer="https://auth.example.com", tokens={"access_token": ["not", "text"]},
                          client_info={"redirect_uris": "not a list"}))
    stored = StoredTokens(store, url)
    assert stored.record is not None and stored.record.tokens is not None  # read back as it was written
    assert anyio.run(stored.get_tokens) is None
    assert anyio.run(stored.get_client_info) is None
