"""Turning loop events into output: a human view (answer on stdout, progress on stderr) or JSON lines."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from nami_yaml.agent.events import Event
from nami_yaml.display import safe_json, visible


def _one_line(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class HumanRenderer:
    """Streams text as it arrives. When stdout is a terminal the text goes there live; when stdout is
    redirected, live text goes to stderr and only the final answer is written to stdout, so
    ``nami run … > answer.txt`` holds the answer and nothing else."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, live_stdout: bool | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.live_stdout = self.out.isatty() if live_stdout is None else live_stdout
        self._mid_line = False
        self._streamed = False  # text of the current step went out live
        self._last_message: str | None = None
        self._last_streamed = False

    @property
    def _live(self) -> TextIO:
        return self.out if self.live_stdout else self.err

    def _end_text(self) -> None:
        if self._mid_line:
            self._live.write("\n")
            self._live.flush()
            self._mid_line = False

    def progress(self, line: str) -> None:
        self._end_text()
        self.err.write(visible(line) + "\n")
        self.err.flush()

    def __call__(self, event: Event) -> None:
        kind = event.type
        if kind == "text_delta":
            text: str = event.text  # type: ignore[union-attr]
            self._live.write(visible(text))
            self._live.flush()
            self._mid_line = not text.endswith("\n")
            self._streamed = True
        elif kind == "message":
            self._end_text()
            self._last_message, self._last_streamed, self._streamed = event.content, self._streamed, False  # type: ignore[union-attr]
        elif kind == "tool_call":
            if self._last_message and not self._last_streamed:
                self.progress(self._last_message)  # a step's text that did not stream (--no-stream)
            self._last_message = None
            self.progress(f"→ {event.summary}")  # type: ignore[union-attr]
        elif kind == "tool_result":
            self.progress(self._result_line(event))
        elif kind == "approval" and not event.approved:  # type: ignore[union-attr]
            self.progress(f"  denied: {event.name}")  # type: ignore[union-attr]
        elif kind == "error":
            self.progress(f"error: {event.message}")  # type: ignore[union-attr]
        elif kind == "final":
            self._end_text()
            usage: dict[str, Any] = event.usage  # type: ignore[union-attr]
            if usage.get("prompt_tokens") or usage.get("completion_tokens"):
                cached = f", {usage['cached_tokens']:,} cached" if usage.get("cached_tokens") else ""
                self.progress(f"tokens: {usage['prompt_tokens']:,} in{cached}, {usage['completion_tokens']:,} out")

    def _result_line(self, event: Any) -> str:
        mark = "✓" if event.ok else "✗"
        lines = event.content.count("\n") + 1 if event.content else 0
        extra = []
        if event.details.get("exit_code") not in (None, 0):
            extra.append(f"exit {event.details['exit_code']}")
        if event.details.get("timed_out"):
            extra.append("timed out")
        if event.details.get("truncated"):
            extra.append("truncated")
        head = _one_line(event.content, 80) if not event.ok else f"{lines} line{'s' if lines != 1 else ''}"
        tail = f" ({', '.join(extra)})" if extra else ""
        return f"  {mark} {event.name}: {head}{tail}"

    def answer(self, text: str | None) -> None:
        """Print the final answer on stdout unless it already streamed there."""
        self._end_text()
        if text and not (self.live_stdout and self._last_streamed):
            text = visible(text)
            self.out.write(text if text.endswith("\n") else text + "\n")
            self.out.flush()


class JsonRenderer:
    """One JSON object per line on stdout, each with a ``type``."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        # Control characters from the model or a tool stay \u escapes: the same JSON, nothing live on a terminal.
        self.out.write(safe_json(event.to_json(), default=str) + "\n")
        self.out.flush()

    def progress(self, line: str) -> None:
        pass

    def answer(self, text: str | None) -> None:
        pass
