"""Turning loop events into output: a human view (answer on stdout, progress on stderr) or JSON lines."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import click

from nami_yaml.agent.events import HISTORY_EVENTS, ErrorEvent, Event, FinalEvent, usage_dict
from nami_yaml.display import safe_json, visible
from nami_yaml.errors import NamiError
from nami_yaml.model.types import Usage
from nami_yaml.session.show import format_totals
from nami_yaml.session.usage import Totals


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
            by = f" (by {event.source})" if event.source else ""  # type: ignore[union-attr]
            self.progress(f"  denied: {event.name}{by}")  # type: ignore[union-attr]
        elif kind == "error":
            self.progress(f"error: {event.message}")  # type: ignore[union-attr]
        elif kind == "dry_run":
            for line in dry_run_lines(event.calls):  # type: ignore[union-attr]
                self.progress(line)
        elif kind == "final":
            self._end_text()
            self.progress_totals(event)

    def progress_totals(self, event: Any) -> None:
        """The run's one line of totals: tokens (``~`` where estimated), steps, and the cost when priced."""
        totals: dict[str, Any] | None = getattr(event, "totals", None)
        if totals and totals.get("requests"):
            self.progress("tokens: " + format_totals(Totals.from_json(totals), unknown_cost=False))
            return
        line = _usage_line(event)
        if line:
            self.progress(line)

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


def dry_run_lines(calls: list[dict[str, Any]]) -> list[str]:
    """The end of a dry run: each call and what would have happened to it."""
    if not calls:
        return ["dry run: the model made no tool call"]
    count = f"{len(calls)} call{'s' if len(calls) != 1 else ''}"
    lines = [f"dry run: {count}, none executed:"]
    for call in calls:
        what = call.get("command") or _one_line(call.get("detail") or "", 100)
        by = f"  [{call['by']}]" if call.get("by") else ""
        detail = f": {call['detail']}" if call["outcome"] in ("denied", "would ask") and call.get("detail") else ""
        lines.append(f"  {call['outcome']:<9}  {call['tool']}: {what}{by}{detail}")
    return lines


def _usage_line(event: Any) -> str | None:
    usage: dict[str, Any] = event.usage
    if not event.usage_reported:
        # Zeros would read as "nothing used"; a run that got answers from a server that counts nothing
        # says so instead. A run that failed before any answer has nothing to say about tokens.
        return "tokens: usage not reported by the server" if event.status in ("answered", "max_steps") else None
    if usage.get("prompt_tokens") or usage.get("completion_tokens"):
        cached = f", {usage['cached_tokens']:,} cached" if usage.get("cached_tokens") else ""
        return f"tokens: {usage['prompt_tokens']:,} in{cached}, {usage['completion_tokens']:,} out"
    return None


class JsonRenderer:
    """One JSON object per line on stdout, each with a ``type``; the last one is always ``final``."""

    def __init__(self, out: TextIO | None = None):
        self.out = out or sys.stdout
        self.finished = False  # a final event went out

    def __call__(self, event: Event) -> None:
        if event.type in HISTORY_EVENTS:  # whole messages, for session files; not part of the event stream
            return
        self.finished = self.finished or event.type == "final"
        # Control characters from the model or a tool stay \u escapes: the same JSON, nothing live on a terminal.
        self.out.write(safe_json(event.to_json(), default=str) + "\n")
        self.out.flush()

    def fail(self, exc: BaseException) -> None:
        """A run that stopped before or outside the loop (a config error, no API key, Ctrl-C at the
        trust prompt) still ends with an ``error`` and exactly one ``final`` event, so scripts can rely on it."""
        if self.finished:
            return
        interrupted = isinstance(exc, KeyboardInterrupt)
        message = "Interrupted by the user." if interrupted else str(exc) or type(exc).__name__
        if not isinstance(exc, NamiError | click.ClickException | KeyboardInterrupt):
            message = f"internal error: {type(exc).__name__}: {message}"
        if not interrupted:
            self(ErrorEvent(message))
        self(FinalEvent(text=None, status="interrupted" if interrupted else "error",
                        usage=usage_dict(Usage(reported=False)), error=message, usage_reported=False))

    def progress(self, line: str) -> None:
        pass

    def answer(self, text: str | None) -> None:
        pass
