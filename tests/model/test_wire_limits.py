"""What the SDK would read whole, held to a size (model/wire_limits.py): a server that never ends an event is
cut off at the limit, as one whose events say too much is; an endless error body or redirect is read only as
far as its start; a stream of keep-alives that says nothing is held to model.timeout; real HTTP, the real
openai SDK; and where an event ends, however the bytes are split."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from nami_yaml.model import ModelError, OpenAIChatModel, wire_limits
from nami_yaml.model.assembly import Silent, TooLarge
from nami_yaml.model.wire_limits import bounded, event_limit
from tests.local_http import QuietHandler, serving

USER = [{"role": "user", "content": "hi"}]
LIMIT = 10_000
PIECE = 16 * 1024
PIECES = 3_000  # 48 MB: as good as endless next to the limit, and a test without the limit fails, not hangs


class Endless(QuietHandler):
    """An event stream whose one event never ends: ``data: `` and then bytes (or lines) without end; counts
    the pieces sent to each request before the client hung up."""

    status, kind, start = 200, "text/event-stream", b"data: "
    piece = b"x" * PIECE
    sent: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.status)
        self.send_header("Content-Type", self.kind)
        self.send_header("Location", "/v1/chat/completions")  # (where a redirect sends the client)
        self.send_header("Connection", "close")
        self.end_headers()
        self.sent.append(0)
        try:
            self.wfile.write(self.start)
            for _ in range(PIECES):
                self.wfile.write(self.piece)
                self.sent[-1] += 1
        except OSError:
            pass  # the client hung up: what it is meant to do


class EndlessLines(Endless):
    piece = b"x" * (PIECE - 7) + b"\ndata: "  # lines of one event: SSE joins them until an empty line


@pytest.mark.parametrize("handler", [Endless, EndlessLines], ids=["one-line", "many-lines"])
def test_an_event_that_never_ends_is_cut_at_the_limit(handler: type[Endless]) -> None:
    handler.sent = []
    with serving(handler) as url:
        model = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=2, max_response_bytes=LIMIT)
        with pytest.raises(ModelError) as failure:
            model.complete(USER, [])
    assert failure.value.kind == "response_too_large"
    assert f"limits.max_response_bytes ({LIMIT:,} bytes)" in str(failure.value)
    [sent] = handler.sent  # not retried
    # The client hung up after the event limit and what the sockets buffer, not the 48 MB there were.
    assert event_limit(LIMIT) // PIECE <= sent < PIECES


def _event(delta: dict, finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode() + b"\n\n"


def test_one_event_longer_than_the_limit_on_the_wire_passes_when_what_it_says_fits() -> None:
    answer = "\x01" * (LIMIT - 1_000)  # 9,000 bytes of text, spelled "\u0001" on the wire: 54,000

    class Whole(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            body = _event({"role": "assistant", "content": answer}) + _event({}, "stop") + b"data: [DONE]\n\n"
            assert len(body) > 5 * LIMIT
            self.reply(200, body, {"Content-Type": "text/event-stream"})

    with serving(Whole) as url:
        turn = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=0, max_response_bytes=LIMIT).complete(USER, [])
    assert turn.content == answer


def _through(chunks: list[bytes], limit: int) -> list[bytes]:
    return list(bounded(iter(chunks), limit, 1))


@pytest.mark.parametrize("end", [b"\n\n", b"\r\n\r\n", b"\r\r", b"\n\r\n", b"\r\n\n"],
                         ids=["lf", "crlf", "cr", "lf-crlf", "crlf-lf"])
def test_every_way_an_event_can_end_starts_the_count_again(end: bytes) -> None:
    event = b"data: " + b"y" * 50
    assert _through([event + end] * 20, limit=70) == [event + end] * 20
    # split inside its end: the two halves still end it
    head, tail = end[:1], end[1:]
    assert len(_through([event + head, tail] * 20, limit=70)) == 40
    with pytest.raises(TooLarge):
        _through([event] * 20, limit=70)  # no end at all


def test_the_count_is_of_what_came_after_the_last_end() -> None:
    assert _through([b"data: a\n\n" + b"z" * 60, b"z" * 10], limit=70)
    with pytest.raises(TooLarge) as cut:
        _through([b"data: a\n\n" + b"z" * 60, b"z" * 11], limit=70)
    assert cut.value.limit == 1


def test_no_limit_leaves_the_response_as_it_is() -> None:
    from nami_yaml.model.wire_limits import hold_events

    class Response:
        def iter_bytes(self) -> Iterator[bytes]:
            yield b"x" * 10

    response = Response()
    hold_events(response, None)
    assert "iter_bytes" not in vars(response)
    hold_events(response, 1)
    assert list(response.iter_bytes()) == [b"x" * 10]  # within 6 + 64 KiB


class EndlessError(Endless):
    """An error response (or a redirect) whose body goes on: the SDK reads an error's body whole."""

    status, kind, start = 400, "application/json", b'{"error": {"message": "the request was refused: '


class EndlessRedirect(EndlessError):
    status = 307


@pytest.mark.parametrize("handler", [EndlessError, EndlessRedirect], ids=["error", "redirect"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
def test_an_endless_error_body_is_read_only_as_far_as_its_start(handler: type[Endless], stream: bool) -> None:
    handler.sent = []
    with serving(handler) as url:
        model = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=0, stream=stream, max_response_bytes=LIMIT)
        with pytest.raises(ModelError) as failure:
            model.complete(USER, [])
    message = str(failure.value)
    assert "\n" not in message and len(message) < 2_000
    if handler is EndlessError:
        assert "(400)" in message and "the request was refused: xxx" in message
    # Hung up on after ERROR_BODY_LIMIT bytes and what the sockets buffer (a few MB), not the 48 MB there were.
    assert handler.sent and all(sent < PIECES // 2 for sent in handler.sent)


def test_an_error_body_within_the_limit_is_read_whole() -> None:
    class Refusal(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.reply(400, json.dumps({"error": {"message": "model 'm' does not exist"}}).encode(),
                       {"Content-Type": "application/json"})

    with serving(Refusal) as url, pytest.raises(ModelError) as failure:
        OpenAIChatModel("m", f"{url}/v1", "k", max_retries=0).complete(USER, [])
    assert "model 'm' does not exist" in str(failure.value)


KEEP_ALIVE = b": keep-alive\n\n"
NOTHING = b'data: {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []}\n\n'


class Chatter(QuietHandler):
    """A stream that begins with ``said`` and then sends ``filler`` every 10 ms, for 20 s, then ``late``: the
    connection never goes quiet long enough for a read to time out."""

    said, filler, late = b"", KEEP_ALIVE, b""
    encoding: str | None = None
    requests: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.requests.append(1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if self.encoding:
            self.send_header("Content-Encoding", self.encoding)
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(self.said)
            for _ in range(2_000):
                self.wfile.write(self.filler)
                self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(self.late)
        except OSError:
            pass  # the client hung up: what it is meant to do


@pytest.mark.parametrize("filler", [KEEP_ALIVE, NOTHING], ids=["keep-alives", "empty-events"])
@pytest.mark.parametrize("said", [b"", _event({"role": "assistant", "content": "Let me"})], ids=["at-once", "mid-answer"])
def test_a_stream_that_says_nothing_for_the_timeout_is_closed_and_not_retried(filler: bytes, said: bytes) -> None:
    handler = type("Handler", (Chatter,), {"said": said, "filler": filler, "requests": []})
    with serving(handler) as url:
        model = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=2, timeout=0.3)
        with pytest.raises(ModelError) as failure:
            model.complete(USER, [])
    assert failure.value.kind == "stream_silent"
    assert "said nothing for 0.3 s (model.timeout)" in str(failure.value)
    assert handler.requests == [1]


def test_gzip_blocks_that_inflate_to_nothing_are_no_escape_from_the_silence_limit() -> None:
    # A gzip header, then empty deflate blocks: bytes on the wire that the decoder turns into nothing at all.
    handler = type("Handler", (Chatter,), {"said": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff",
                                           "filler": b"\x00\x00\x00\xff\xff", "encoding": "gzip", "requests": []})
    with serving(handler) as url:
        model = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=2, timeout=0.3)
        with pytest.raises(ModelError) as failure:
            model.complete(USER, [])
    assert failure.value.kind == "stream_silent"
    assert handler.requests == [1]


def test_a_finished_answer_is_kept_when_the_server_does_not_end_the_stream() -> None:
    said = _event({"role": "assistant", "content": "done"}) + _event({}, "stop")
    late = _event({"content": " (read 20 s later)"})  # what a client reading to the end would add
    handler = type("Handler", (Chatter,), {"said": said, "late": late, "requests": []})
    with serving(handler) as url:
        turn = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=2, timeout=0.3).complete(USER, [])
    assert (turn.content, turn.finish_reason, handler.requests) == ("done", "stop", [1])


def test_a_slow_answer_between_keep_alives_is_not_silence() -> None:
    class Slow(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for n in range(10):
                self.wfile.write(_event({"content": f"{n} "}) + KEEP_ALIVE * 3)
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(_event({}, "stop") + b"data: [DONE]\n\n")

    with serving(Slow) as url:
        turn = OpenAIChatModel("m", f"{url}/v1", "k", max_retries=0, timeout=5).complete(USER, [])
    assert turn.content == "0 1 2 3 4 5 6 7 8 9 "


def test_silence_is_counted_from_the_last_thing_said(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(wire_limits.time, "monotonic", lambda: clock[0])
    said = [0]

    def chunks() -> Iterator[bytes]:
        for second in range(1, 13):  # a chunk a second
            clock[0] = float(second)
            if second == 3:
                said[0] += 1  # something was said: the 4 s start again from here
            yield b"x"

    watched = wire_limits._watched(chunks(), 4.0, lambda: said[0])
    got = []
    with pytest.raises(Silent) as silent:
        for chunk in watched:
            got.append(chunk)
    assert silent.value.seconds == 4.0
    # seconds 1-2, 3 (said), 4-7 (7 is 4 s after it, not over), and at second 8 the silence was over 4 s
    assert len(got) == 7
