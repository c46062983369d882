"""Known OpenAI-compatible providers: where they live, which key they read, and how they differ.

A preset is plain data (no openai import) so ``nami --help`` and config validation stay cheap.

Keys of a preset:
  base_url        the endpoint, including ``/v1`` where the server needs it
  model           a sensible default model name for that server
  api_key_env     the variable holding the key (None: no key needed)
  api_key         a placeholder sent when no key is needed (local servers ignore it, the SDK wants one)
  context_window  tokens the default model accepts, for budgeting history
  quirks          how the server departs from OpenAI's behaviour, see QUIRKS
  pricing         USD per million tokens by model name: input, cached_input, output (see PRICES_AS_OF)
"""

from __future__ import annotations

import copy
from typing import Any

from nami_yaml.errors import ConfigError
from nami_yaml.setting_defaults import MODEL

# Each quirk with its default value: what works with OpenAI and with the strictest servers alike.
QUIRKS: dict[str, Any] = {
    # Send stream_options.include_usage; some servers and proxies reject the whole request with it.
    "stream_usage": True,
    # Send parallel_tool_calls=false with tools, for models that garble several calls in one turn.
    "no_parallel_tool_calls": False,
    # Where options["max_tokens"] goes; OpenAI's newer models only accept "max_completion_tokens".
    "max_tokens_field": "max_tokens",
    # Send "" instead of null as the content of an assistant message that only calls tools. OpenAI and
    # DeepSeek accept both; some local servers (llama.cpp's Python server) refuse null. false keeps
    # null, for a provider that refuses "".
    "null_content_as_empty": True,
    # How the model is told the JSON Schema of a structured answer (`nami run --schema`): "json_schema" sends
    # response_format {type: json_schema} (OpenAI's Structured Outputs), "json_object" sends {type:
    # json_object} and the schema in the instructions (DeepSeek's JSON Output), "none" only the instructions.
    # A JSON mode produces objects, so an answer of another type is always asked for by instructions; nami
    # validates the answer whichever way it was asked for.
    "response_format": "none",
}
RESPONSE_FORMATS = ("json_schema", "json_object", "none")

DEFAULT_PRESET: str = MODEL["provider"]  # model.provider's default (nami_yaml.setting_defaults)

# Prices change: these are the providers' list prices as of this date, in USD per million tokens, for
# cost reports and limits.max_cost. agent.yaml's model.pricing overrides them (and prices any other model).
PRICES_AS_OF = "2025-12"
_DEEPSEEK_PRICE = {"input": 0.28, "cached_input": 0.028, "output": 0.42}  # V3.2, both endpoints


def _price(input: float, cached_input: float, output: float) -> dict[str, float]:
    return {"input": input, "cached_input": cached_input, "output": output}

PRESETS: dict[str, dict[str, Any]] = {
    "deepseek": {
        "base_url": "https://api.deepseek.com",
        "model": "deepseek-chat",
        "api_key_env": "DEEPSEEK_API_KEY",
        "api_key": None,
        "context_window": 128_000,
        # JSON Output (api-docs.deepseek.com/guides/json_mode): json_object only, no json_schema, and the
        # prompt must say "json", which the instructions do.
        "quirks": {"response_format": "json_object"},
        "pricing": {"deepseek-chat": _DEEPSEEK_PRICE, "deepseek-reasoner": _DEEPSEEK_PRICE},
    },
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4.1-mini",
        "api_key_env": "OPENAI_API_KEY",
        "api_key": None,
        "context_window": 1_047_576,
        "quirks": {"max_tokens_field": "max_completion_tokens", "response_format": "json_schema"},
        "pricing": {
            "gpt-5": _price(1.25, 0.125, 10.00), "gpt-5-mini": _price(0.25, 0.025, 2.00),
            "gpt-5-nano": _price(0.05, 0.005, 0.40), "gpt-4.1": _price(2.00, 0.50, 8.00),
            "gpt-4.1-mini": _price(0.40, 0.10, 1.60), "gpt-4.1-nano": _price(0.10, 0.025, 0.40),
            "gpt-4o": _price(2.50, 1.25, 10.00), "gpt-4o-mini": _price(0.15, 0.075, 0.60),
            "o3": _price(2.00, 0.50, 8.00), "o4-mini": _price(1.10, 0.275, 4.40),
        },
    },
    "ollama": {
        "base_url": "http://localhost:11434/v1",
        "model": "qwen2.5-coder:7b",
        "api_key_env": None,
        "api_key": "ollama",
        # Ollama silently truncates the prompt at its num_ctx, so budget for a small window.
        "context_window": 8_192,
        # Local servers (Ollama, vLLM, llama.cpp) do take response_format, but enforce it with a grammar over
        # the whole reply, which leaves no room for the tool calls an agent makes before it answers: the
        # schema goes in the instructions ("none"), and nami validates the answer.
        "quirks": {},
    },
    "vllm": {
        "base_url": "http://localhost:8000/v1",
        "model": "Qwen/Qwen2.5-Coder-7B-Instruct",
        "api_key_env": None,
        "api_key": "EMPTY",
        "context_window": 32_768,
        "quirks": {},
    },
    "llamacpp": {
        "base_url": "http://localhost:8080/v1",
        "model": "local",  # llama-server serves the one model it loaded, whatever the name
        "api_key_env": None,
        "api_key": "sk-no-key-required",
        "context_window": 8_192,
        "quirks": {"no_parallel_tool_calls": True},
    },
}


def get_preset(name: str) -> dict[str, Any]:
    """A copy of the named preset with every quirk filled in, so callers may change it freely."""
    if name not in PRESETS:
        raise ConfigError(f"unknown provider preset {name!r}; known: {', '.join(sorted(PRESETS))}")
    preset = copy.deepcopy(PRESETS[name])
    preset["quirks"] = resolve_quirks(preset["quirks"])
    return preset


def resolve_quirks(quirks: dict[str, Any] | None) -> dict[str, Any]:
    """Defaults overlaid with ``quirks``; an unknown name is a ConfigError rather than silently ignored."""
    unknown = sorted(set(quirks or {}) - set(QUIRKS))
    if unknown:
        raise ConfigError(f"unknown model quirk(s) {', '.join(unknown)}; known: {', '.join(QUIRKS)}")
    return {**QUIRKS, **(quirks or {})}
