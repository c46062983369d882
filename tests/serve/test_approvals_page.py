"""``nami approvals serve``: a real ``nami run`` without a terminal waits on the queue; a real page process
answers it, from a real headless Chromium (selenium), or from ``nami approvals --url``. What another site or
a request without the page's token tries is refused and writes nothing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue as queues
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.testing import FakeOpenAIServer
from tests.approvals.conftest import Run, agent_yaml, approvals, audit_lines, start
from tests.helpers import write
from tests.local_http import QuietHandler, serving
from tests.programs import CHROMEDRIVER, CHROMIUM, need_browser

ALICE = "alice-secret-token-0123456789"


class Page:
    """``nami approvals serve`` as a real process in the project; ``url`` is the URL it prints."""

    def __init__(self, project: Path, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nami_yaml", "approvals", "serve", "--listen", "127.0.0.1:0", *args],
            cwd=project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queues.Queue[str] = queues.Queue()
        self.lines = lines  # what it says after the URL
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stderr or []], daemon=True).start()
        self.said: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queues.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.said.append(line)
            if line.strip().startswith("http://"):
                self.url = line.strip()
                self.base = self.url.partition("/?")[0]
                return
        self.stop()
        raise AssertionError(f"the page did not start: {''.join(self.said)}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def pages() -> Iterator[Callable[..., Page]]:
    started: list[Page] = []

    def open_page(project: Path, *args: str) -> Page:
        page = Page(project, *args)
        started.append(page)
        return page

    yield open_page
    for page in started:
        page.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@contextlib.contextmanager
def screenshot_on_failure(driver: Any, path: Path) -> Iterator[None]:
    """Whatever fails in the block, the page as the browser showed it is saved, and where it is said."""
    try:
        yield
    except BaseException:
        driver.save_screenshot(str(path))
        print(f"screenshot of the approvals page: {path}")
        raise


def wait_until(driver: Any, check: Callable[[Any], Any], timeout: float = 60) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(check)


def queue_files(project: Path) -> list[str]:
    return sorted(path.name for path in (project / "queue").iterdir())


def entry_of(project: Path, approval_id: str) -> dict[str, Any]:
    shown = approvals(project, "show", approval_id, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def the_call(approval_id: str) -> dict[str, Any]:
    [line] = [line for line in audit_lines() if line["tool"] == "make_marker"]
    assert line["decided_by"] == f"approvals queue {approval_id}"
    return line


def test_the_page_approves_a_waiting_run_in_a_browser(project: Path, fake_openai: FakeOpenAIServer,
                                                        runs: list[Run], pages: Callable[..., Page], browser: Any,
                                                        tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run, approval_id = start(project, fake_openai, runs, answer="made it")
    page = pages(project)
    with screenshot_on_failure(browser, tmp_path / "approvals-page.png"):
        browser.get(page.url)
        assert browser.current_url == page.base + "/"  # the token left the address bar
        assert browser.get_cookies() == []  # the token is the tab's (sessionStorage), never a cookie
        card = wait_until(browser, lambda d: d.find_elements(By.ID, f"approval-{approval_id}"))[0]
        text = card.text
        assert card.find_element(By.CSS_SELECTOR, '[data-field="argv"]').text == '["touch","marker.txt"]'
        assert "make_marker" in text and "on target dev" in text and "permissions.write" in text
        assert "approved by nobody yet" in text
        card.find_element(By.NAME, "reason").send_keys("checked on the page")
        card.find_element(By.CSS_SELECTOR, "button.approve").click()
        done = wait_until(browser, lambda d: approval_id in d.find_element(By.ID, "answered").text and
                          d.find_element(By.ID, "answered").text)
        assert f"{approval_id}: Approved: approved" in done
        wait_until(browser, lambda d: not d.find_elements(By.ID, f"approval-{approval_id}"))  # gone once answered
    code, out, err = run.finish()
    assert code == 0, err
    assert out == "made it\n" and (project / "marker.txt").exists()
    line = the_call(approval_id)
    assert line["status"] == "ran" and "(OS user, " in line["reason"] and "label approvals page" in line["reason"]
    assert [a["reason"] for a in entry_of(project, approval_id)["approvals"]] == ["checked on the page"]


class Attacker(QuietHandler):
    """Another site on this machine (another port of 127.0.0.1: the same *site* to a browser, which sends it
    every cookie of 127.0.0.1): a page whose form posts an approval to the approvals page as soon as it
    loads; it keeps the cookies the browser sent it."""

    target = ""
    cookies: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        Attacker.cookies.append(self.headers.get("Cookie") or "")
        form = (f'<form id="f" method="post" action="{self.target}" enctype="text/plain">'
                '<input name=\'{"reason": "x", "pad":"\' value=\'"}\'></form>'
                '<script>document.getElementById("f").submit()</script>')
        self.reply(200, form.encode(), {"Content-Type": "text/html"})


def test_an_answer_without_the_page_token_is_refused_and_writes_nothing(
        project: Path, fake_openai: FakeOpenAIServer, runs: list[Run], pages: Callable[..., Page], browser: Any,
        tmp_path: Path) -> None:
    run, approval_id = start(project, fake_openai, runs, answer="understood")
    page = pages(project)
    answer_url = f"{page.base}/api/approvals/{approval_id}/approve"
    before = queue_files(project)
    with screenshot_on_failure(browser, tmp_path / "approvals-page.png"):
        browser.get(page.url)  # signed in: the page token is in the tab
        wait_until(browser, lambda d: d.find_elements("id", f"approval-{approval_id}"))
        # The page's own origin, with whatever the browser sends by itself, JSON, but not the page token: refused.
        status, said = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {method: 'POST', credentials: 'include',"
            " headers: {'Content-Type': 'application/json'}, body: JSON.stringify({reason: 'forged'})})"
            ".then(async r => done([r.status, await r.text()]))", answer_url)
        assert status == 401 and "Open the URL" in said
        # Another site's form (same site, another port), which the browser sends with every cookie it has for
        # 127.0.0.1: there is none of the page's to steal, and the form's post is refused.
        Attacker.target, Attacker.cookies = answer_url, []
        with serving(Attacker) as attacker:
            browser.get(attacker + "/")
            wait_until(browser, lambda d: "Open the URL" in d.page_source)
        assert Attacker.cookies and not any(Attacker.cookies)
    assert queue_files(project) == before  # no answer file was ever written
    entry = entry_of(project, approval_id)
    assert entry["state"] == "pending" and entry["approvals"] == []
    assert not (project / "marker.txt").exists()
    assert approvals(project, "deny", approval_id, "--reason", "end of the test").returncode == 0
    assert run.finish()[0] == 0


def request(url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            body: dict[str, Any] | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    sent = urllib.request.Request(url, data=data, method=method,
                                  headers={**({"Content-Type": "application/json"} if data else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(sent, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_page_answers_only_under_its_own_name(project: Path, pages: Callable[..., Page]) -> None:
    """A page whose DNS name was rebound to 127.0.0.1 sends its own name as Host: refused before anything."""
    page = pages(project)
    token = page.url.partition("token=")[2]
    assert request(f"{page.base}/api/approvals", headers={"Authorization": f"Bearer {token}"})[0] == 200
    status, said = request(f"{page.base}/api/approvals", headers={"Authorization": f"Bearer {token}",
                                                                  "Host": "rebound.example:80"})
    assert status == 421 and "not served under that name" in said
    assert request(f"{page.base}/api/approvals")[0] == 401  # no token, no cookie: nothing shown
    assert request(f"{page.base}/?token=wrong")[0] == 403


def test_remote_answers_need_a_named_approvers_token(project: Path, fake_openai: FakeOpenAIServer,
                                                      runs: list[Run], pages: Callable[..., Page]) -> None:
    refused = approvals(project, "serve", "--allow-remote", "--listen", "127.0.0.1:0")
    assert refused.returncode == 2 and "--allow-remote needs named approvers" in refused.stderr
    beyond = approvals(project, "serve", "--listen", "0.0.0.0:0")
    assert beyond.returncode == 2 and "is not a loopback address" in beyond.stderr

    write(project / "agent.yaml", agent_yaml(
        f"  approvers:\n    alice: {{token_sha256: {hashlib.sha256(ALICE.encode()).hexdigest()}}}\n"))
    run, approval_id = start(project, fake_openai, runs, answer="made it")
    page = pages(project, "--allow-remote")
    before = queue_files(project)

    # The page token lets a program read the page, but an answer needs a named approver's token.
    page_token = page.url.partition("token=")[2]
    status, said = request(f"{page.base}/api/approvals/{approval_id}/approve", method="POST", body={},
                           headers={"Authorization": f"Bearer {page_token}"})
    assert status == 403 and "named approver's token" in said
    wrong = approvals(project, "approve", approval_id, "--url", page.base, env={"NAMI_APPROVER_TOKEN": "not-hers"})
    assert wrong.returncode == 2 and "HTTP 401" in wrong.stderr
    assert queue_files(project) == before

    as_alice = {"NAMI_APPROVER_TOKEN": ALICE}
    listed = approvals(project, "--url", page.base, "--json", env=as_alice)
    assert listed.returncode == 0, listed.stderr
    assert [item["id"] for item in json.loads(listed.stdout)] == [approval_id]
    shown = approvals(project, "show", approval_id, "--url", page.base, env=as_alice)
    assert shown.returncode == 0 and 'argv: ["touch", "marker.txt"]' in shown.stdout
    answered = approvals(project, "approve", approval_id, "--url", page.base, "--reason", "ok", env=as_alice)
    assert answered.returncode == 0, answered.stderr
    assert f"{approval_id}: approved" in answered.stdout
    code, out, err = run.finish()
    assert code == 0 and out == "made it\n", err
    assert "approved by alice (token, as OS user " in the_call(approval_id)["reason"]
    again = approvals(project, "approve", approval_id, "--url", page.base, env=as_alice)
    assert again.returncode == 2 and "answered already (approved)" in again.stderr


def test_the_page_closes_a_connection_that_never_finishes_its_request(tmp_path: Path) -> None:
    """A client that opens connections and never ends a request (slowloris) would hold one thread and one
    descriptor each, for ever: the page, reachable by anyone with --allow-remote, would stop answering."""
    import socket

    from nami_yaml.approvals.store import QueueFolder
    from nami_yaml.serve.approvals_page import IDLE_TIMEOUT, serve_page

    urls: queues.Queue[str] = queues.Queue()
    threading.Thread(target=serve_page, args=(QueueFolder.open(str(tmp_path / "queue")), "127.0.0.1", 0),
                     kwargs={"approvers": {}, "remote": False, "on_ready": urls.put}, daemon=True).start()
    port = int(urls.get(timeout=60).split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1")  # and nothing more
        client.settimeout(IDLE_TIMEOUT + 60)
        assert client.recv(1024) == b""  # the page closed it (without the limit: socket.timeout)


def test_the_cli_takes_a_local_pages_token_from_the_environment_or_a_file(
        project: Path, pages: Callable[..., Page], tmp_path: Path) -> None:
    """Never from the command line (every user reads it in the process list): `--url` with ?token= is refused
    without repeating the token, and the page says where its token goes."""
    page = pages(project)
    token = page.url.partition("token=")[2]
    assert "takes this token in $NAMI_PAGE_TOKEN or --token-file FILE, never in the URL" in page.lines.get(timeout=60)
    listed = approvals(project, "--url", page.base, "--json", env={"NAMI_PAGE_TOKEN": token})
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr
    file = tmp_path / "page-token"
    file.write_text(token + "\n")
    file.chmod(0o600)
    listed = approvals(project, "--url", page.base, "--token-file", str(file), "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr
    refused = approvals(project, "--url", page.url, "--json")
    assert refused.returncode == 2 and "$NAMI_PAGE_TOKEN" in refused.stderr and token not in refused.stderr
