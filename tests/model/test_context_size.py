"""Reading a refusal as too long: each server's wording of the two sizes, and the ``error:`` line of a stream
however the bytes arrive."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nami_yaml.model.context_size import StreamErrors, nearby, overflow


@pytest.mark.parametrize(("body", "asked", "window", "local"), [
    ({"message": "request (2211 tokens) exceeds the available context size (2048 tokens), try increasing it",
      "type": "exceed_context_size_error", "n_prompt_tokens": 2211, "n_ctx": 2048}, 2211, 2048, True),
    ({"message": "This model's maximum context length is 2048 tokens. However, you requested 2211 tokens (2211 in "
                 "the messages, None in the completion).", "code": "context_length_exceeded"}, 2211, 2048, False),
    ({"message": "Requested tokens (2211) exceed context window of 2048"}, 2211, 2048, True),
    ({"message": "The decoder prompt (length 40000) is longer than the maximum model length of 32768."}, 40000, 32768,
     False),
    ({"message": "This model's maximum context length is 65536 tokens"}, None, 65536, False),
])
def test_each_servers_wording(body: dict, asked: int | None, window: int, local: bool) -> None:
    found = overflow(body, body["message"], request_bytes=4000)
    assert (found.window, found.local) == (window, local)
    assert (found.asked, found.estimated) == ((asked, False) if asked else (1000, True))


def test_an_unknown_window_is_left_unknown() -> None:
    found = overflow({"message": "the request exceeds the available context size, try increasing it"}, "", 400)
    assert found.window is None and "more than the model at" in found.message("http://h/v1", 400)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:8080/v1", "http://192.168.1.9/v1",
                                 "http://gpu.internal:8000/v1"])
def test_nearby_servers(url: str) -> None:
    assert nearby(url)


def test_far_servers() -> None:
    assert not nearby("https://api.deepseek.com") and not nearby("https://8.8.8.8/v1")


@pytest.mark.parametrize("pieces", [
    [b'error: {"code": 400, "message": "too long"}\n\ndata: [DONE]\n\n'],
    [b"err", b'or: {"code": 400, "mess', b'age": "too long"}', b"\n\ndata: [DONE]\n\n"],
    [b": keep-alive\n", b"\r\nerror:", b' {"error": {"code": 400, "message": "too long"}}\r\n'],
])
def test_an_error_line_however_it_is_cut(pieces: list[bytes]) -> None:
    response = SimpleNamespace(iter_bytes=lambda: iter(pieces))
    errors = StreamErrors()
    errors.watch(response)
    assert b"".join(response.iter_bytes()) == b"".join(pieces)  # the SDK reads every byte, unchanged
    assert errors.body is not None and errors.body["message"] == "too long"


def test_error_inside_text_is_not_an_error_line() -> None:
    pieces = [b'data: {"choices": [{"delta": {"content": "error: none"}}]}\n\n', b"data: [DONE]\n\n"]
    response = SimpleNamespace(iter_bytes=lambda: iter(pieces))
    errors = StreamErrors()
    errors.watch(response)
    list(response.iter_bytes())
    assert errors.body is None
