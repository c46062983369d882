"""The model side: shared turn types, provider presets, and the OpenAI-compatible client.

``OpenAIChatModel`` is resolved on first access so importing this package never loads the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nami_yaml.model.presets import DEFAULT_PRESET, PRESETS, QUIRKS, get_preset, resolve_quirks
from nami_yaml.model.types import AssistantTurn, Model, ModelError, ToolCall, Usage

if TYPE_CHECKING:
    from nami_yaml.model.client import OpenAIChatModel

__all__ = ["DEFAULT_PRESET", "PRESETS", "QUIRKS", "AssistantTurn", "Model", "ModelError", "OpenAIChatModel",
           "ToolCall", "Usage", "get_preset", "resolve_quirks"]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":
        from nami_yaml.model.client import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
