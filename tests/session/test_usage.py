"""The usage meter's request size (the compactor's and the cost limit's estimate too) is what a full
serialisation of the request gives, without serialising the conversation or the tools again each time."""

from __future__ import annotations

from typing import Any

import pytest

from nami_yaml.agent import History, RequestInfo
from nami_yaml.session import usage as usage_module
from nami_yaml.session.usage import UsageMeter, estimate_tokens, request_chars

TOOLS = [{"type": "function", "function": {"name": "ping", "description": "Answers ok.",
                                           "parameters": {"type": "object", "properties": {}}}}]


def info(history: History, tools: list[dict[str, Any]], step: int = 1) -> RequestInfo:
    return RequestInfo(history, tools, step, None)


def test_the_request_size_is_a_full_serialisation_after_appends_replacements_and_new_tools() -> None:
    meter = UsageMeter()
    tools = [dict(t) for t in TOOLS]
    history = History([{"role": "system", "content": "Système"}, {"role": "user", "content": "go"}])
    for n in range(3):
        assert meter.request_chars(info(history, tools)) == request_chars(history.messages, tools)
        history.append({"role": "assistant", "content": f"step {n}"})
    history.replace([{"role": "user", "content": "summary"}], "compaction")
    assert meter.request_chars(info(history, tools)) == request_chars(history.messages, tools)
    tools.append({"type": "function", "function": {"name": "more", "parameters": {"type": "object"}}})
    assert meter.request_chars(info(history, tools)) == request_chars(history.messages, tools)
    assert meter.request_chars(info(history, [])) == request_chars(history.messages, [])
    assert meter.estimate_request(info(history, [])) == estimate_tokens(request_chars(history.messages, []))


def test_the_tools_are_serialised_once_per_list(monkeypatch: pytest.MonkeyPatch) -> None:
    serialised: list[int] = []
    real = usage_module.tools_chars
    monkeypatch.setattr(usage_module, "tools_chars", lambda tools: serialised.append(1) or real(tools))
    meter = UsageMeter()
    history = History([{"role": "user", "content": "go"}])
    for n in range(10):
        meter.before_request(info(history, TOOLS, n + 1))  # the meter's count
        meter.estimate_request(info(history, TOOLS, n + 1))  # the compactor's
        history.append({"role": "assistant", "content": "x"})
    assert len(serialised) == 1
