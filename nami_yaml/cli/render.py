"""Turning loop events into output: a human view (answer on stdout, progress on stderr) or JSON lines."""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

import click

from nami_yaml.agent.events import NOT_STREAMED, ErrorEvent, Event, FinalEvent, usage_dict
from nami_yaml.cli.status import StatusLine
from nami_yaml.cli.style import Terminal
from nami_yaml.display import plural, safe_json, visible, visible_line
from nami_yaml.errors import NamiError
from nami_yaml.model.types import Usage
from nami_yaml.runners.sandbox.describe import sandbox_line
from nami_yaml.session.show import format_totals
from nami_yaml.session.usage import Totals


def _one_line(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


PREVIEW_LINES = 4  # lines of a tool's result shown under it (all with -v, none with -q)
_MIN_SUMMARY = 20  # characters of a one-line result always shown, however narrow the terminal
QUIET, NORMAL, VERBOSE = -1, 0, 1


def _width() -> int:
    """Columns for a line under a tool's call (the terminal's, as it is now, less the indent)."""
    return shutil.get_terminal_size((100, 24)).columns - 6


class HumanRenderer:
    """Streams text as it arrives. When stdout is a terminal the text goes there live (rendered as
    Markdown when it takes colours); when stdout is redirected, only the final answer is written to it, so
    ``nami run … > answer.txt`` holds the answer and nothing else. Meanwhile the text streams on stderr
    only where stderr is a terminal (``mirror``: a person watching it come); a redirected stderr is a log
    of progress, and never gets the answer: the text of a step that called tools is progress, and is
    written there once the step ends.

    Progress goes to stderr: each tool call and its result with the first lines of what it returned,
    a status line (spinner, elapsed time, step, tokens) while nami waits, and the run's totals.
    ``verbosity``: QUIET shows only the answer and errors, VERBOSE whole tool results."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, live_stdout: bool | None = None,
                 term: Terminal | None = None, verbosity: int = NORMAL, mirror: bool | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.live_stdout = self.out.isatty() if live_stdout is None else live_stdout
        self.mirror = self.err.isatty() if mirror is None else mirror
        self.term = term or Terminal()
        self.paint = self.term.err
        self.verbosity = verbosity
        self._mid_line = False
        self._streamed = False  # text of the current step went out live
        self._last_message: str | None = None
        self._last_streamed = False
        self._markdown: Any = None  # a MarkdownStream while a message streams to a terminal
        self._pending: dict[str, str] = {}  # tool calls announced and not answered yet: id -> name
        self._progress: dict[str, str] = {}  # what running calls last said of their progress: id -> text
        self._write_lock = threading.RLock()  # progress and server logs come from other threads
        self._after_progress = False  # tool lines were the last thing on screen: text starts after a gap
        self.step = 0
        self.tokens: Callable[[], int] | None = None  # tokens so far, for the status line
        self.status: StatusLine | None = None
        if self.term.status:
            self.status = StatusLine(self.err, self.paint, self._status_details, self._at_line_start)

    @property
    def _live(self) -> TextIO:
        return self.out if self.live_stdout else self.err

    # -- the parts of the screen ----------------------------------------------------------------------

    def _screen(self) -> contextlib.AbstractContextManager[Any]:
        return self.status.clear_for_output() if self.status is not None else contextlib.nullcontext()

    def _status_details(self) -> str:
        parts = [f"step {self.step}"] if self.step else []
        tokens = self.tokens() if self.tokens is not None else 0
        if tokens:
            parts.append(plural(tokens, "token"))
        return " · ".join(parts)

    def _at_line_start(self) -> bool:
        return not self._mid_line and (self._markdown is None or self._markdown.at_line_start)

    def _wait(self, label: str, *, same_wait: bool = False) -> None:
        if self.status is not None:
            self.status.show(label, same_wait=same_wait)

    def _end_text(self) -> None:
        if self._markdown is not None:
            markdown, self._markdown = self._markdown, None
            markdown.close()
        if self._mid_line:
            self._live.write("\n")
            self._live.flush()
            self._mid_line = False

    def progress(self, line: str, *styles: str) -> None:
        """One line of progress on stderr, escaped, then painted with ``styles``."""
        self._write_err([self.paint(visible(line), *styles)])

    def _write_err(self, lines: list[str]) -> None:
        """Lines already escaped (and painted) on stderr, after any text still open."""
        with self._write_lock, self._screen():
            self._end_text()
            self.err.write("".join(line + "\n" for line in lines))
            self.err.flush()
            self._after_progress = True

    def begin(self) -> None:
        """A run starts: the first request goes out. rich is loaded meanwhile, so the first words of the
        answer do not wait for it."""
        self.step = 1
        self._wait("thinking")
        if self.live_stdout and self.term.markdown and "nami_yaml.cli.markdown" not in sys.modules:
            threading.Thread(target=_load_markdown, name="nami-load-rich", daemon=True).start()

    def close(self) -> None:
        if self.status is not None:
            self.status.close()

    # -- events ---------------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        kind = event.type
        if kind == "text_delta":
            self._text(event.text)  # type: ignore[union-attr]
        elif kind == "message":
            with self._screen():
                self._end_text()
            self._last_message, self._last_streamed, self._streamed = event.content, self._streamed, False  # type: ignore[union-attr]
            self._wait("thinking")  # tool calls may still be on their way
        elif kind == "tool_call":
            if self._last_message and not self._last_streamed and self.verbosity > QUIET:
                self.progress(self._last_message)  # a step's text that did not stream (--no-stream)
            self._last_message = None
            self._pending[event.id] = event.name  # type: ignore[union-attr]
            if self.verbosity > QUIET:
                self._write_err([self._call_line(event)])
            self._wait_for_tools()
        elif kind == "tool_progress":
            self._tool_progress(event)
        elif kind == "server_log":
            if self.verbosity >= VERBOSE:  # type: ignore[union-attr]
                self.progress(f"  [MCP server {event.server}, {event.level}] {event.message}", "dim")  # type: ignore[union-attr]
        elif kind == "tool_result":
            self._pending.pop(event.id, None)  # type: ignore[union-attr]
            self._progress.pop(event.id, None)  # type: ignore[union-attr]
            if self.verbosity > QUIET:
                self._write_err(self._result_lines(event))
            if self._pending:
                self._wait_for_tools()
            else:
                self.step += 1
                self._wait("thinking")
        elif kind == "approval" and not event.approved and event.source != "user":  # type: ignore[union-attr]
            # (a user's own no was just answered on screen; a policy's is news)
            by = f" (by {event.source})" if event.source else ""  # type: ignore[union-attr]
            if self.verbosity > QUIET:
                self.progress(f"  denied: {event.name}{by}", "yellow")  # type: ignore[union-attr]
        elif kind == "error":
            self.progress(f"error: {event.message}", "red")  # type: ignore[union-attr]
        elif kind == "notice":
            self.progress(event.message, "yellow")  # type: ignore[union-attr]
        elif kind == "dry_run":
            for line in dry_run_lines(event.calls):  # type: ignore[union-attr]
                self.progress(line)
        elif kind == "final":
            if self.status is not None:
                self.status.hide()
            self._pending.clear()
            with self._screen():
                self._end_text()
            if self.verbosity > QUIET:
                self.progress_totals(event)

    def _text(self, text: str) -> None:
        if not (self.live_stdout or self.mirror):
            return  # nobody watches it come: the answer goes to stdout at the end, a step's text to stderr
        if self.status is not None:
            self.status.streaming()
        with self._screen():
            if self._after_progress and self.live_stdout and self.out.isatty():
                self.out.write("\n")  # on one screen, the answer stands apart from the tool lines
            self._after_progress = False
            if self.live_stdout and self.term.markdown:
                if self._markdown is None:
                    self._markdown = markdown_stream(self.out, self.term)
                self._markdown.feed(text)
            else:
                self._live.write(visible(text))
                self._live.flush()
                self._mid_line = not text.endswith("\n")
        self._streamed = True

    def _wait_for_tools(self, *, same_wait: bool = False) -> None:
        pending = list(self._pending.items())
        if pending:
            first, name = pending[0]
            more = f" +{len(pending) - 1}" if len(pending) > 1 else ""
            said = self._progress.get(first)
            self._wait(f"running {name}{more}" + (f": {_one_line(said, 60)}" if said else ""), same_wait=same_wait)

    def _tool_progress(self, event: Any) -> None:
        """A running call said how far it is: on the status line (without one, a line of its own with -v)."""
        if event.id not in self._pending:
            return  # answered already: a late notification
        self._progress[event.id] = event.message
        if self.status is not None:
            self._wait_for_tools(same_wait=True)
        elif self.verbosity >= VERBOSE:
            self.progress(f"  … {event.name}: {event.message}", "dim")

    def progress_totals(self, event: Any) -> None:
        """The run's one line of totals: tokens (``~`` where estimated), steps, and the cost when priced."""
        totals: dict[str, Any] | None = getattr(event, "totals", None)
        if totals and totals.get("requests"):
            self.progress("tokens: " + format_totals(Totals.from_json(totals), unknown_cost=False), "dim")
            return
        line = _usage_line(event)
        if line:
            self.progress(line, "dim")

    # -- tool lines -----------------------------------------------------------------------------------

    def _call_line(self, event: Any) -> str:
        summary = visible(event.summary)
        name = visible(event.name)
        if summary.startswith(name):
            summary = self.paint.bold(name) + summary[len(name):]
        return f"{self.paint.cyan('→')} {summary}"

    def _result_lines(self, event: Any) -> list[str]:
        """``  ✓ name: 12 lines`` (or ``✗`` and the first line of the error, in red), then the first lines
        of the result, dimmed."""
        paint = self.paint
        extra = []
        if event.details.get("exit_code") not in (None, 0):
            extra.append(f"exit {event.details['exit_code']}")
        if event.details.get("timed_out"):
            extra.append("timed out")
        if event.details.get("truncated"):
            extra.append("truncated")
        tail = f" ({', '.join(extra)})" if extra else ""
        content = visible(event.content)
        lines = content.split("\n") if content else []
        name = visible(event.name)
        if event.ok and len(lines) == 1:  # a one-line result is its own summary
            # The terminal's width matters only to a line longer than the least it always leaves room for.
            room = _MIN_SUMMARY if len(lines[0]) <= _MIN_SUMMARY else max(_MIN_SUMMARY, _width() - len(name))
            return [f"  {paint.green('✓')} {name}: {_one_line(lines[0], room)}{tail}"]
        width = _width()
        if event.ok:
            count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
            head = f"  {paint.green('✓')} {name}: {count}{tail}"
            body = lines
        else:
            first = _one_line(lines[0] if lines else "", 100)
            head = paint(f"  ✗ {name}: {first}{tail}", "red", "bold")
            body = lines[1:]
            if event.details.get("denied"):
                body = []  # the reason is in the line above and in the "denied" line
        if self.verbosity < VERBOSE:
            hidden = max(0, len(body) - PREVIEW_LINES)
            body = body[:PREVIEW_LINES]
        else:
            hidden = 0
        shown = [paint.dim("    │ " + (line if len(line) <= width else line[: max(1, width - 1)] + "…"))
                 for line in body if self.verbosity >= VERBOSE or line.strip()]
        if hidden:
            shown.append(paint.dim(f"    … {hidden:,} more line{'s' if hidden != 1 else ''}"))
        return [head, *shown]

    def answer(self, text: str | None) -> None:
        """Print the final answer on stdout unless it already streamed there."""
        with self._screen():
            self._end_text()
            if text and not (self.live_stdout and self._last_streamed):
                if self.term.markdown:
                    stream = markdown_stream(self.out, self.term)
                    stream.feed(text if text.endswith("\n") else text + "\n")  # whole lines: no partial drawn
                    stream.close()
                    return
                text = visible(text)
                self.out.write(text if text.endswith("\n") else text + "\n")
                self.out.flush()


def _load_markdown() -> None:
    with contextlib.suppress(ImportError):
        import nami_yaml.cli.markdown  # noqa: F401


def markdown_stream(out: TextIO, term: Terminal) -> Any:
    """Rendered Markdown (rich, imported only now); plain text where rich is missing."""
    try:
        from nami_yaml.cli.markdown import MarkdownStream
    except ImportError:
        return PlainStream(out)
    return MarkdownStream(out, color=term.color_out)


class PlainStream:
    """The stand-in for MarkdownStream when rich cannot be imported: the text as it comes, escaped."""

    def __init__(self, out: TextIO):
        self.out = out
        self.at_line_start = True

    def feed(self, text: str) -> None:
        self.out.write(visible(text))
        self.out.flush()
        self.at_line_start = text.endswith("\n")

    def close(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
        self.at_line_start = True


def dry_run_lines(calls: list[dict[str, Any]]) -> list[str]:
    """The end of a dry run: each call and what would have happened to it."""
    if not calls:
        return ["dry run: the model made no tool call"]
    count = f"{len(calls)} call{'s' if len(calls) != 1 else ''}"
    lines = [f"dry run: {count}, none executed:"]
    for call in calls:
        # A command line on one line, as the approval question shows it: a newline in a value is \n, not a
        # line that reads like another call of the list.
        what = visible_line(call["command"]) if call.get("command") else _one_line(call.get("detail") or "", 100)
        by = f"  [{call['by']}]" if call.get("by") else ""
        detail = f": {call['detail']}" if call["outcome"] in ("denied", "would ask") and call.get("detail") else ""
        asked = f" (would ask {call['asked']})" if call.get("asked") else ""
        lines.append(f"  {call['outcome']:<9}  {call['tool']}: {what}{by}{detail}{asked}")
        if call.get("would_plan"):
            lines.append(f"             {visible(call['would_plan'])}")
        sandbox = sandbox_line(call["plan"]) if isinstance(call.get("plan"), dict) else None
        if sandbox is not None and call["outcome"] != "denied":
            lines.append(f"             {sandbox}")
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
        self.tokens: Callable[[], int] | None = None  # unused: the events carry the usage

    def __call__(self, event: Event) -> None:
        if event.type in NOT_STREAMED:  # for session files and tracers; not part of the stream
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

    def begin(self) -> None:
        pass

    def close(self) -> None:
        pass
