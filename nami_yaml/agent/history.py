"""The conversation, as the list of messages sent to the model, and one event per change.

Every message is kept exactly as it goes into the request (an assistant's tool-call arguments are the raw
text the model sent, not a defaults-filled copy), so a session file written from these events rebuilds
each request byte for byte. Changes other than appending (``/clear``, compaction) are explicit and
reported, because they change the request prefix.

Because of that, the size of the request's messages is counted once per message (:attr:`History.chars`):
a step adds its few messages to the count instead of serialising the whole conversation again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from nami_yaml.agent.events import Event, HistoryReplaced, MessageAppended

Message = dict[str, Any]


_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # made once, not per message


def message_chars(message: Message) -> int:
    """Characters of one message as the client sends it: compact JSON, non-ASCII as is."""
    return len(_compact(message))


class History:
    def __init__(self, messages: list[Message] | None = None, emit: Callable[[Event], None] | None = None):
        # The list is used as it is (not copied): a caller that passed one sees it grow.
        self._messages: list[Message] = messages if messages is not None else []
        self.emit = emit
        self._counted = 0  # the first messages whose characters are summed in _chars
        self._chars = 0

    @property
    def messages(self) -> list[Message]:
        """The live list sent with each request. Change it only through this object."""
        return self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    @property
    def chars(self) -> int:
        """Characters of the messages as the client sends them (a compact JSON list), the same as
        serialising them all, counted once per message: messages are only appended between replacements."""
        messages = self._messages
        if self._counted > len(messages):  # the list shrank behind this object's back: count afresh
            self._counted = self._chars = 0
        for message in messages[self._counted:]:
            self._chars += message_chars(message)
        self._counted = len(messages)
        return self._chars + max(0, len(messages) - 1) + 2  # the commas between them, and the brackets

    def append(self, message: Message) -> None:
        self._messages.append(message)
        self._report(len(self._messages) - 1, message)

    def extend(self, messages: Iterable[Message]) -> None:
        """All at once, so an interrupt can never leave half of them in the list."""
        added = list(messages)
        start = len(self._messages)
        self._messages.extend(added)
        for offset, message in enumerate(added):
            self._report(start + offset, message)

    def replace(self, messages: list[Message], reason: str) -> None:
        """Swap the whole list (``reason``: "clear", "compaction", …); the next request has a new prefix."""
        self._messages[:] = messages
        self._counted = self._chars = 0
        if self.emit is not None:
            self.emit(HistoryReplaced(reason=reason, messages=list(messages)))

    def _report(self, index: int, message: Message) -> None:
        if self.emit is not None:
            self.emit(MessageAppended(index=index, message=message))
