"""approvals.notify: each new pending approval is POSTed to a webhook, signed; a receiver checks it."""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import time
from pathlib import Path

from nami_yaml.approvals.notify import webhook
from nami_yaml.testing import FakeOpenAIServer
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, start
from tests.helpers import run_nami, write
from tests.local_http import QuietHandler, serving

SECRET = "hook-secret-for-tests"
received: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()


class Receiver(QuietHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        received.put(({k.lower(): v for k, v in self.headers.items()}, body))
        self.reply(204, b"")


class Failing(QuietHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply(503, b"down")


def test_each_pending_approval_is_posted_signed(project: Path, fake_openai: FakeOpenAIServer, runs: list[Run],
                                                monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    with serving(Receiver) as url:
        write(project / "agent.yaml",
              agent_yaml(f"  notify: {{webhook: '{url}/hook', secret_env: HOOK_SECRET}}\n  page_url: https://approve.example/\n"))
        run, approval_id = start(project, fake_openai, runs)
        headers, body = received.get(timeout=30)
    timestamp = headers["x-nami-timestamp"]
    expected = hmac.new(SECRET.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-nami-signature"], f"sha256={expected}")
    assert abs(int(timestamp) - time.time()) < 120
    sent = json.loads(body)
    assert sent["id"] == approval_id and sent["tool"] == "make_marker" and sent["risk"] == "write"
    assert sent["argv"] == ["touch", "marker.txt"] and sent["target"] == "dev" and "arguments" not in sent
    assert sent["rule"] == "permissions.write" and sent["cwd"] == str(project)
    assert sent["answer"] == {"approve": f"nami approvals approve {approval_id}",
                              "deny": f"nami approvals deny {approval_id} --reason TEXT",
                              "page": "https://approve.example/"}
    assert f"nami approvals approve {approval_id}" in sent["text"] and "make_marker" in sent["text"]
    assert approvals(project, "deny", approval_id, "--reason", "no").returncode == 0
    assert run.finish()[0] == 0


def test_a_failed_notification_is_said_and_never_holds_up_the_run() -> None:
    said: list[str] = []
    recorded: list[tuple[str, str]] = []
    with serving(Failing) as url:
        send = webhook({"webhook": url}, {}, said.append, pause=0.01,
                       failed=lambda record, problem: recorded.append((record["id"], problem)))
        assert send is not None
        send({"id": "abcdef012345", "tool": "t"}).join(30)
    assert said == ["nami: approval abcdef012345: the webhook of approvals.notify failed (HTTP 503); answer it "
                    "with `nami approvals`"]
    assert recorded == [("abcdef012345", "HTTP 503")]


class Broken(QuietHandler):
    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply(500, b"broken")


def test_a_failed_notification_is_in_the_audit_log(project: Path, fake_openai: FakeOpenAIServer,
                                                   runs: list[Run]) -> None:
    """A real run whose webhook answers 500 (four tries): the audit log has a line saying so, for that
    approval, before anyone answered it; the run waited on, and its call has its own line after."""
    with serving(Broken) as url:
        write(project / "agent.yaml", agent_yaml(f"  notify: {{webhook: '{url}/hook'}}\n"))
        run, approval_id = start(project, fake_openai, runs)
        deadline = time.monotonic() + 90
        while not (failed := [line for line in audit_lines() if line.get("status") == "notify failed"]):
            assert time.monotonic() < deadline, "no audit line for the failed notification"
            time.sleep(0.2)
    [line] = failed
    assert line["approval"] == approval_id and line["tool"] == "make_marker" and line["target"] == "dev"
    assert line["reason"] == f"approval {approval_id}: the webhook of approvals.notify failed (HTTP 500)"
    assert line["plan"]["argv"] == ["touch", "marker.txt"] and line["decision"] is None
    assert approvals(project, "deny", approval_id, "--reason", "no").returncode == 0
    code, _, err = run.finish()
    assert code == 0 and "the webhook of approvals.notify failed (HTTP 500)" in err
    assert [entry["status"] for entry in audit_lines()] == ["notify failed", "denied"]
    logged = run_nami(None, "log", cwd=project)
    assert "notify failed" in logged.stdout and "failed (HTTP 500)" in logged.stdout, logged.stdout + logged.stderr


def test_an_unset_secret_sends_nothing_unsigned() -> None:
    said: list[str] = []
    with serving(Receiver) as url:
        send = webhook({"webhook": url, "secret_env": "NOT_SET_HERE"}, {}, said.append)
        assert send is not None
        send({"id": "abcdef012345"}).join(30)
    assert received.empty() and "NOT_SET_HERE" in said[0]
