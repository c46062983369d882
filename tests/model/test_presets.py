"""Provider presets are complete, valid, and usable to build a client."""

from __future__ import annotations

import pytest

from nami_yaml.errors import ConfigError
from nami_yaml.model import DEFAULT_PRESET, PRESETS, QUIRKS, OpenAIChatModel, get_preset
from nami_yaml.testing import FakeOpenAIServer


def test_deepseek_is_the_default() -> None:
    preset = get_preset(DEFAULT_PRESET)
    assert DEFAULT_PRESET == "deepseek"
    assert (preset["base_url"], preset["model"], preset["api_key_env"]) == \
        ("https://api.deepseek.com", "deepseek-chat", "DEEPSEEK_API_KEY")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_complete(name: str) -> None:
    preset = get_preset(name)
    assert set(preset) - {"pricing"} == {"base_url", "model", "api_key_env", "api_key", "context_window", "quirks"}
    for price in (preset.get("pricing") or {}).values():
        assert set(price) == {"input", "cached_input", "output"} and price["cached_input"] <= price["input"]
    assert preset["base_url"].startswith(("https://", "http://localhost:"))
    assert isinstance(preset["context_window"], int) and preset["context_window"] >= 4096
    assert set(preset["quirks"]) == set(QUIRKS)
    # Either a key variable to read, or a placeholder for a server that needs none.
    assert bool(preset["api_key_env"]) != bool(preset["api_key"])


def test_local_presets_need_no_key() -> None:
    assert get_preset("ollama")["api_key"] == "ollama"
    assert get_preset("ollama")["base_url"] == "http://localhost:11434/v1"
    assert get_preset("vllm")["base_url"] == "http://localhost:8000/v1"
    assert get_preset("llamacpp")["base_url"] == "http://localhost:8080/v1"


def test_get_preset_returns_a_copy() -> None:
    get_preset("openai")["quirks"]["stream_usage"] = False
    assert get_preset("openai")["quirks"]["stream_usage"] is True


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="deepseek"):
        get_preset("nope")


def test_a_preset_drives_the_client_against_a_local_server() -> None:
    preset = get_preset("llamacpp")
    with FakeOpenAIServer(["hi"]) as srv:
        model = OpenAIChatModel(preset["model"], srv.base_url, preset["api_key"], preset["api_key_env"],
                                quirks=preset["quirks"], max_retries=0)
        tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
        assert model.complete([{"role": "user", "content": "x"}], tools).content == "hi"
        sent = srv.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-no-key-required"
    assert sent["parallel_tool_calls"] is False


def test_each_preset_says_how_a_structured_answer_is_asked_for() -> None:
    from nami_yaml.model.presets import RESPONSE_FORMATS

    formats = {name: get_preset(name)["quirks"]["response_format"] for name in PRESETS}
    assert formats == {"deepseek": "json_object", "openai": "json_schema", "ollama": "none", "vllm": "none",
                       "llamacpp": "none"}
    assert set(formats.values()) <= set(RESPONSE_FORMATS) and QUIRKS["response_format"] == "none"
