"""Test helpers shipped with nami: a scripted OpenAI-compatible server (stdlib only, no openai import)."""

from __future__ import annotations

from nami_yaml.testing.fake_server import (
    FakeOpenAIServer,
    RecordedRequest,
    ScriptedCall,
    ScriptedResponse,
    call,
    demo_responder,
    error,
    response_from_dict,
    text,
    tool_calls,
    usage,
)

__all__ = ["FakeOpenAIServer", "RecordedRequest", "ScriptedCall", "ScriptedResponse", "call", "demo_responder",
           "error", "response_from_dict", "text", "tool_calls", "usage"]
