"""The history counts the characters of the request's messages once per message, and the count is always
what serialising the whole list gives, through appends, replacements and a list changed behind its back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nami_yaml.agent import History
from nami_yaml.agent import history as history_module

SYSTEM = {"role": "system", "content": "You are a test."}


def serialised(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages, ensure_ascii=False, separators=(",", ":")))


def step(n: int) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{n}", "type": "function", "function": {"name": "ping", "arguments": f'{{"n": {n}}}'}}]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"résultat {n} ✓"}]


def test_chars_equal_a_full_serialisation_after_appends_and_replacements() -> None:
    history = History()
    assert history.chars == serialised([]) == 2
    history.append(dict(SYSTEM))
    assert history.chars == serialised(history.messages)
    history.append({"role": "user", "content": "naïve \"quoted\" text, 日本語, \ud800 and \n"})
    for n in range(5):
        history.extend(step(n))
        assert history.chars == serialised(history.messages)
    history.replace([dict(SYSTEM), {"role": "user", "content": "[Summary] short"}], "compaction")
    assert history.chars == serialised(history.messages)
    history.extend(step(9))
    history.replace([*history.messages, *step(10), *step(11)], "repair")  # a longer replacement
    assert history.chars == serialised(history.messages)
    history.replace([], "clear")
    assert history.chars == 2


def test_a_list_that_shrank_behind_its_back_is_counted_afresh() -> None:
    messages = [dict(SYSTEM), *step(1), *step(2)]
    history = History(messages)
    assert history.chars == serialised(messages)
    del messages[1:]  # the caller's own list (History uses it as it is)
    assert history.chars == serialised(messages)
    messages.extend(step(3))
    assert history.chars == serialised(messages)


def test_each_message_is_serialised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[dict[str, Any]] = []
    real = history_module.message_chars

    def counting(message: dict[str, Any]) -> int:
        counted.append(message)
        return real(message)

    monkeypatch.setattr(history_module, "message_chars", counting)
    history = History([dict(SYSTEM)])
    for n in range(50):
        history.extend(step(n))
        history.chars  # noqa: B018 - asked twice per request (the meter and the compactor)
        history.chars  # noqa: B018
    assert len(counted) == 1 + 50 * 2  # not the whole history again at every request
