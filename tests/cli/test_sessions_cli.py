"""Sessions as a user meets them: real ``nami`` processes, the real openai SDK and the fake server.
Continuing a session must send, byte for byte, what one process that never stopped would have sent."""

from __future__ import annotations

import json
import os
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nami_yaml.session.store import SessionStore
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls, usage
from tests.helpers import NAMI, run_nami
from tests.sandboxing import kill, running


def script() -> list:
    return [tool_calls(call("list_dir", {}, id="call_look")), text("One file."), text("Still one file.")]


def only_session() -> tuple[str, Path]:
    store = SessionStore()
    [session_id] = store.ids()
    return session_id, store.path(session_id)


@pytest.mark.parametrize("how", ["run --continue", "chat --resume ID", "chat --resume"])
def test_continuing_sends_exactly_what_an_uninterrupted_conversation_sends(how: str, workdir: Path) -> None:
    (workdir / "a.txt").write_text("a\n")
    with FakeOpenAIServer(script()) as straight:
        result = run_nami(straight, "chat", cwd=workdir, stdin="look around\nlook again\n")
        assert result.returncode == 0, result.stderr
    for leftover in SessionStore().ids():
        SessionStore().path(leftover).unlink()

    with FakeOpenAIServer(script()) as server:
        first = run_nami(server, "run", "look around", cwd=workdir)
        assert first.returncode == 0 and first.stdout == "One file.\n", first.stderr
        session_id, path = only_session()
        if how == "run --continue":
            second = run_nami(server, "run", "--continue", "look again", cwd=workdir)
        else:
            args = ["chat", "--resume", session_id[:15]] if how.endswith("ID") else ["chat", "--resume"]
            second = run_nami(server, *args, cwd=workdir, stdin="look again\n")
        assert second.returncode == 0, second.stderr
        assert "Still one file." in second.stdout
        if how.startswith("chat"):  # what it continues, recapped on stderr
            assert (f"resuming session {session_id} (0 earlier turns before the last):\n  you:  look around\n"
                    "  nami: One file.\n") in second.stderr
    assert len(server.raw_requests) == 3 == len(straight.raw_requests)
    assert server.raw_requests[2] == straight.raw_requests[2]
    assert SessionStore().ids() == [session_id]  # continued, not a new session
    types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert types.count("final") == 2 and types.count("resume") == 1


def test_a_killed_run_continues_with_a_valid_request(workdir: Path) -> None:
    marker = f"60.{os.getpid() % 1000:03d}8"  # found by its argument: pids in the sandbox are its own
    with FakeOpenAIServer([tool_calls(call("bash", {"command": f"exec sleep {marker}"}))]) as server:
        env = dict(os.environ, NAMI_BASE_URL=server.base_url)
        process = subprocess.Popen([*NAMI, "run", "--yes", "build it"], cwd=workdir, env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not running(f"sleep {marker}"):
                assert time.monotonic() < deadline and process.poll() is None, "the tool never started"
                time.sleep(0.05)
            process.kill()  # SIGKILL: no handler runs, nothing answers the call
            process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            kill(running(f"sleep {marker}"))  # (the sandbox dies with nami; unsandboxed it would not)
        server.add(text("The build was cut short."))
        result = run_nami(server, "run", "--continue", "what happened?", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "answered as interrupted" in result.stderr
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["content"].startswith("Error: Interrupted") and sent[3]["tool_call_id"] == sent[2]["tool_calls"][0]["id"]


def test_continue_with_nothing_to_continue_is_a_usage_error(workdir: Path) -> None:
    result = run_nami(None, "run", "--continue", "go on", cwd=workdir, env={"NAMI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert result.returncode == 2
    assert "no earlier session in" in result.stderr and "Traceback" not in result.stderr


class _Resources(HTMLParser):
    """Everything in a page that could make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.fetching: list[str] = []
        self.text: list[str] = []
        self.csp: str | None = None
        self.handlers: list[str] = []  # on* attributes: script a browser runs

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers.extend(f"{tag} {name}" for name, _ in attrs if name.lower().startswith("on"))
        values = dict(attrs)
        if values.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = values.get("content")
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "data", "poster", "background") or (
                    value and ("url(" in value or "://" in value)) and name != "content":
                self.fetching.append(f"{tag} {name}={value}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_list_show_and_an_html_export_that_loads_nothing(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    hostile = '<script src="https://evil.example/x.js"></script><img src=x onerror=alert(1)>'
    (workdir / "page.html").write_text(hostile + "\n")
    fake_openai.add(tool_calls(call("read_file", {"path": "page.html"})),
                    text(f"The page holds {hostile}. See https://example.com/docs."))
    assert run_nami(fake_openai, "run", "what is in page.html?", cwd=workdir).returncode == 0
    session_id, _ = only_session()

    listing = run_nami(None, "sessions", cwd=workdir)
    assert listing.returncode == 0, listing.stderr
    assert session_id in listing.stdout and "what is in page.html?" in listing.stdout
    rows = json.loads(run_nami(None, "sessions", "--json", cwd=workdir).stdout)
    assert rows[0]["id"] == session_id and rows[0]["steps"] == 2 and rows[0]["prompt_tokens"] > 0

    shown = run_nami(None, "sessions", "show", session_id, cwd=workdir)
    assert shown.returncode == 0, shown.stderr
    assert "› what is in page.html?" in shown.stdout and "→ read_file" in shown.stdout
    assert f"    ← {1:>6}\t{hostile}" in shown.stdout  # the read_file result, as text

    target = workdir / "review.html"
    exported = run_nami(None, "sessions", "export", session_id[:10], "--html", str(target), cwd=workdir)
    assert exported.returncode == 0, exported.stderr
    page = target.read_text()
    parser = _Resources()
    parser.feed(page)
    assert parser.fetching == []
    assert not {"script", "img", "link", "iframe", "object", "embed", "base"} & set(parser.tags)
    assert "@import" not in page and "url(" not in page
    assert parser.csp is not None and "default-src 'none'" in parser.csp
    assert "&lt;script src=&quot;https://evil.example/x.js&quot;&gt;" in page
    text_content = "".join(parser.text)
    assert "what is in page.html?" in text_content and f"The page holds {hostile}" in text_content
    assert parser.tags.count("details") >= 3  # system prompt, the call, its result: collapsed

    missing = run_nami(None, "sessions", "show", "1999", cwd=workdir)
    assert missing.returncode == 2 and "no session '1999'" in missing.stderr


def test_the_listing_and_cost_give_the_same_count(workdir: Path) -> None:
    with FakeOpenAIServer([text("hi", usage=usage(8_023, 13)), text("again", usage=usage(8_053, 12))]) as server:
        chat = run_nami(server, "chat", cwd=workdir, stdin="hello\nonce more\n/cost\n")
    assert chat.returncode == 0, chat.stderr
    session_id, _ = only_session()
    cost = next(line for line in chat.stdout.splitlines() if line.startswith(f"session {session_id}: "))
    assert cost.startswith(f"session {session_id}: 16,076 in, 25 out, 2 steps")
    header, row = run_nami(None, "sessions", cwd=workdir).stdout.splitlines()[:2]
    assert header.split()[:7] == ["ID", "LAST", "USED", "STEPS", "IN", "OUT", "COST"]
    assert row.split()[0] == session_id and row.split()[3:6] == ["2", "16,076", "25"]  # what /cost said


def test_max_steps_says_how_to_go_on(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(tool_calls(call("list_dir", {})), text("done"))
    result = run_nami(fake_openai, "run", "--max-steps", "1", "look", cwd=workdir)
    assert result.returncode == 3
    assert 'nami run --continue "go on"' in result.stderr
    assert run_nami(fake_openai, "run", "--continue", "go on", cwd=workdir).stdout == "done\n"


def test_a_continued_session_still_reads_the_output_its_results_saved(workdir: Path, temp_home: Path) -> None:
    (workdir / "agent.yaml").write_text("limits: {max_output: 1000}\n")
    env = {"NAMI_CONFIG": "agent.yaml"}
    with FakeOpenAIServer([tool_calls(call("bash", {"command": "seq 1 20000"})), text("long")]) as server:
        first = run_nami(server, "run", "--yes", "count", cwd=workdir, env=env)
        assert first.returncode == 0, first.stderr
        session_id, _ = only_session()
        result = next(m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool")
        spill = result.split("full output: ")[1].split("]")[0]
        assert Path(spill).parent == temp_home / ".local" / "state" / "nami" / "output" / f"session-{session_id}"
        server.add(tool_calls(call("read_file", {"path": spill, "offset": 19999})), text("the end is 20000"))
        second = run_nami(server, "run", "--continue", "what is the last number?", cwd=workdir, env=env)
    assert second.returncode == 0, second.stderr
    read = [m["content"] for m in server.requests[3]["messages"] if m["role"] == "tool"][-1]
    assert read.split("\n")[:2] == [f"{19999:>6}\t19999", f"{20000:>6}\t20000"]


def test_the_html_export_escapes_every_field_of_a_hostile_session(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    """Not only answers and results: a tool name the model made up, its arguments, the model's name and the
    workspace's path are the session's text too, and none of them becomes markup."""
    attack = '"></summary></pre><script>alert(1)</script><img src=x onerror=alert(2)>'
    folder = workdir / 'w"><svg onload=alert(3)>'
    folder.mkdir()
    fake_openai.add(tool_calls(call(attack, {"path": attack}), call("read_file", {"path": attack})),
                    text(f"done {attack}"))
    ran = run_nami(fake_openai, "run", f"task {attack}", cwd=folder, env={"NAMI_MODEL": attack})
    assert ran.returncode == 0, ran.stderr
    session_id, _ = only_session()
    target = workdir / "review.html"
    assert run_nami(None, "sessions", "export", session_id, "--html", str(target), cwd=workdir).returncode == 0
    page = target.read_text()
    parser = _Resources()
    parser.feed(page)
    assert not {"script", "img", "svg", "iframe", "object", "embed", "base", "link"} & set(parser.tags)
    assert parser.handlers == [] and parser.fetching == []
    text_content = "".join(parser.text)
    assert text_content.count(attack) >= 5  # the prompt, the made-up name, the arguments, the answer, the model
    assert 'w"><svg onload=alert(3)>' in text_content


def test_the_listing_is_one_row_per_session_whatever_the_workspace_is_called(fake_openai: FakeOpenAIServer,
                                                                           workdir: Path) -> None:
    folder = workdir / "repo\n20250101-000000-fake  2025-01-01 00:00      1         1        -  ~: harmless"
    folder.mkdir()
    fake_openai.add(text("done"))
    assert run_nami(fake_openai, "run", "go", cwd=folder).returncode == 0
    rows = run_nami(None, "sessions", cwd=workdir).stdout.splitlines()
    assert len(rows) == 2 and "repo\\n20250101-000000-fake" in rows[1]  # the header, then one row
