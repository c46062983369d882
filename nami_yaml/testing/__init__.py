"""Test helpers shipped with nami: a scripted OpenAI-compatible server (stdlib only, no openai import) and
an in-memory ScriptedModel for tests that need no HTTP."""

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
from nami_yaml.testing.scripted_model import ScriptedModel

__all__ = ["FakeOpenAIServer", "RecordedRequest", "ScriptedCall", "ScriptedModel", "ScriptedResponse", "call", "demo_responder",
           "error", "response_from_dict", "text", "tool_calls", "usage"]
