"""What a recorded session holds for a replay (app/replay.py): its user turns in order, each tool call
the model made with the result it got, and each turn's answer. Read from the message records, so a
session continued, compacted or cleared still yields every turn as it happened."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.session.loader import LoadedSession


@dataclass(frozen=True)
class RecordedCall:
    id: str
    name: str
    raw_arguments: str  # as the model sent them
    result: str | None  # the content the model got back; None when the file has no result for it
    turn: int  # the user turn (0-based) it was made in


@dataclass
class Recording:
    turns: list[str] = field(default_factory=list)  # the user messages, in order
    calls: list[RecordedCall] = field(default_factory=list)  # in the order the model made them
    answers: list[str | None] = field(default_factory=list)  # each turn's last answer text

    @classmethod
    def of(cls, session: LoadedSession) -> Recording:
        recording = cls()
        results: dict[str, str] = {}
        calls: list[tuple[str, str, str, int]] = []
        for record in session.records:
            message = record.get("message") if record.get("type") == "message" else None
            if not isinstance(message, dict):
                continue
            role, content = message.get("role"), message.get("content")
            if role == "user" and isinstance(content, str):
                recording.turns.append(content)
                recording.answers.append(None)
            elif role == "assistant" and recording.turns:
                for call in message.get("tool_calls") or []:
                    function = call.get("function") if isinstance(call, dict) else None
                    if isinstance(function, dict):
                        calls.append((str(call.get("id")), str(function.get("name")),
                                      str(function.get("arguments") or ""), len(recording.turns) - 1))
                if isinstance(content, str) and content.strip() and not message.get("tool_calls"):
                    recording.answers[-1] = content
            elif role == "tool" and isinstance(message.get("tool_call_id"), str):
                results[message["tool_call_id"]] = text_of(content)
        recording.calls = [RecordedCall(call_id, name, raw, results.get(call_id), turn)
                           for call_id, name, raw, turn in calls]
        return recording


def text_of(content: Any) -> str:
    """A tool message's content as text (a list of parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def call_key(name: str, arguments: Any) -> str:
    """Same tool and same arguments, whatever the order of their keys."""
    return name + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
