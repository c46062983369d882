"""The approvals page counts wrong tokens (serve/approvals_page.py ``Backoff``): past a few from one client, and
past more from all clients, every token is refused unseen (429, Retry-After) for a time that doubles with each
further wrong one, so an approver's token cannot be guessed at the speed of the network. Over real HTTP, from
several loopback addresses (127.0.0.x: one client each), against a page served with --allow-remote."""

from __future__ import annotations

import hashlib
import http.client
import queue as queues
import threading
from pathlib import Path

import pytest

from nami_yaml.approvals.store import QueueFolder
from nami_yaml.serve.approvals_page import serve_page

ALICE = "alice-secret-token-0123456789"
FREE, FREE_ALL = 5, 50  # wrong tokens let through from one client, from all (Backoff's defaults)


@pytest.fixture
def page(tmp_path: Path) -> tuple[int, str]:
    """A remote page (as ``--allow-remote`` serves it) on 127.0.0.1: its port and its page token."""
    urls: queues.Queue[str] = queues.Queue()
    threading.Thread(target=serve_page, args=(QueueFolder.open(str(tmp_path / "queue")), "127.0.0.1", 0),
                     kwargs={"approvers": {"alice": hashlib.sha256(ALICE.encode()).hexdigest()}, "remote": True,
                             "on_ready": urls.put}, daemon=True).start()
    url = urls.get(timeout=60)
    return int(url.split(":")[2].split("/")[0]), url.partition("token=")[2]


def get(port: int, token: str, source: str, path: str = "/api/approvals") -> tuple[int, str | None]:
    """GET ``path`` with ``token`` from the loopback address ``source``: the status and Retry-After."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("Retry-After")
    finally:
        connection.close()


def test_a_client_past_its_wrong_tokens_is_refused_even_the_right_one(page: tuple[int, str]) -> None:
    port, token = page
    guesser = "127.0.0.2"
    assert [get(port, f"guess-{n}", guesser)[0] for n in range(FREE)] == [401] * FREE
    status, retry = get(port, ALICE, guesser)  # the right token now: not even looked at
    assert status == 429 and retry is not None and int(retry) >= 1
    assert get(port, token, guesser)[0] == 429
    assert get(port, token, "127.0.0.3")[0] == 200  # another client is not held up by one guesser


def test_many_clients_past_the_wrong_tokens_of_all_hold_everyone_off(page: tuple[int, str]) -> None:
    port, token = page
    per_client = FREE - 1  # each client stays below its own limit
    sources = [f"127.0.1.{n}" for n in range(1, FREE_ALL // per_client + 2)]
    statuses = [get(port, f"guess-{source}-{n}", source)[0] for source in sources for n in range(per_client)]
    assert statuses[:FREE_ALL] == [401] * FREE_ALL and set(statuses[FREE_ALL:]) == {429}
    assert get(port, token, "127.0.2.1")[0] == 429  # a new client with the right token: after the wait


def test_a_wrong_page_token_in_the_address_counts_too(page: tuple[int, str]) -> None:
    port, token = page
    source = "127.0.0.4"
    assert [get(port, "", source, f"/?token=guess{n}")[0] for n in range(FREE)] == [403] * FREE
    assert get(port, "", source, f"/?token={token}")[0] == 429


def test_the_wait_doubles_with_each_wrong_token_and_ends() -> None:
    from nami_yaml.serve.approvals_page import Backoff

    backoff = Backoff()
    assert (backoff.free, backoff.free_all) == (FREE, FREE_ALL)
    now = 1000.0
    for _ in range(backoff.free - 1):
        backoff.wrong("a", now)
    assert backoff.wait("a", now) == 0  # a few typos are free
    waits = []
    for _ in range(5):
        backoff.wrong("a", now)
        waits.append(backoff.wait("a", now))
    assert waits == [backoff.first * 2 ** n for n in range(5)]
    assert backoff.wait("a", now + waits[-1]) == 0 and backoff.wait("b", now) == 0
    for _ in range(40):
        backoff.wrong("a", now)
    assert backoff.wait("a", now) == backoff.longest  # never for good
    backoff.wrong("a", now + backoff.forget + 1)  # long after the last one: counted from the start again
    assert backoff.wait("a", now + backoff.forget + 1) == 0
