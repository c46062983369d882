"""Compaction: when a request would no longer fit the context window, replace the older turns by a summary
(one model request) and keep the recent turns verbatim, in one step. Between compactions the history only
grows, so the request prefix stays byte-stable and the provider's prompt cache keeps hitting.

A before_request hook. It acts when the request's estimated size passes the threshold (a share of the
context window, or less than ``reserve`` tokens left for the answer), and when the provider refused the
request as too long (the loop then retries once). Cheapest first: if eliding the old, large tool results
is enough, no summary is requested. A tool call is never separated from its result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.agent.hooks import RequestInfo
from nami_yaml.display import plural
from nami_yaml.model.types import Model, ModelError
from nami_yaml.session.usage import StepUsage, UsageMeter, estimate_tokens, request_chars
from nami_yaml.setting_defaults import COMPACTION

Message = dict[str, Any]

SUMMARY_PREFIX = "[Summary of the earlier conversation, written by nami when the context window filled up]"
ELIDE_OVER = 2_000  # characters: older tool results longer than this are elided first
ELIDED = ("[{chars:,} characters of this result elided by nami to save context. Run the tool again if you "
          "need them.]")
AFTER_SHARE = 0.6  # a compaction aims below this share of the trigger, so it is not needed again at once
RESULT_CHARS = 1_500  # of each tool result, in the transcript the summariser reads
MESSAGE_CHARS = 6_000  # of any other message
QUOTE_CHARS = 2_000  # of the user's last request, quoted after the summary

SUMMARISER = """\
You compress the history of a conversation between a user and an AI agent that works through tools, so the
agent can carry on without it. Write a summary that lets the agent continue the work as if it remembered:
- every request of the user, quoted exactly;
- what has been done and found (files read or changed, with paths; commands run and their outcome;
  decisions and their reasons), and what is still open;
- facts the agent will need again (names, values, errors, versions).
Be concise and specific. Do not address the user; write only the summary."""


@dataclass(frozen=True)
class CompactionSettings:
    """What the Compactor works by: agent.yaml's ``compaction:`` (app/economy.py builds it from
    ``effective.compaction``); the defaults are the settings' (nami_yaml.setting_defaults)."""

    enabled: bool = COMPACTION["enabled"]
    threshold: float = COMPACTION["threshold"]  # compact when a request passes this share of the window
    reserve: int = COMPACTION["reserve"]  # or when fewer tokens than this would be left for the answer
    keep_recent: int = COMPACTION["keep_recent"]  # tokens of the latest turns kept verbatim (<= half the trigger)


@dataclass
class CompactionRecord:
    """What one compaction did, for the session file."""

    trigger: str  # "threshold" or "context_length"
    stage: str  # "elide" (large old results only), "summary", or "drop" (the summary request failed)
    summarised: int  # messages replaced by the summary (0 for "elide")
    kept: int  # messages kept verbatim
    elided: int  # tool results elided
    tokens_before: int
    tokens_after: int
    usage: StepUsage | None = None  # the summary request's
    error: str | None = None  # why the summary request failed

    def to_record(self) -> dict[str, Any]:
        return {"type": "compaction", "trigger": self.trigger, "stage": self.stage, "summarised": self.summarised,
                "kept": self.kept, "elided": self.elided, "tokens_before": self.tokens_before,
                "tokens_after": self.tokens_after, "error": self.error}


def turns(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped so that no group boundary falls between a tool call and its results."""
    groups: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "tool" and groups and groups[-1][0].get("role") == "assistant":
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


@dataclass
class Compactor:
    model: Model
    meter: UsageMeter  # its estimates are calibrated on the server's reported usage
    context_window: int | None
    settings: CompactionSettings = field(default_factory=CompactionSettings)
    listeners: list[Callable[[CompactionRecord], None]] = field(default_factory=list)
    before: list[Callable[[str], None]] = field(default_factory=list)  # told before one compacts (PreCompact)

    def trigger(self) -> int | None:
        """Tokens above which a request is compacted first; None without a known context window."""
        if not self.context_window:
            return None
        window = self.context_window
        return max(1, min(int(window * self.settings.threshold), window - self.settings.reserve))

    def __call__(self, info: RequestInfo) -> list[Message] | None:
        if not self.settings.enabled:
            return None
        tokens = self.meter.estimate_request(info)
        limit = self.trigger()
        if info.error is None and (limit is None or tokens <= limit):
            return None
        if limit is None or info.error is not None:
            # Refused as too long: whatever the window, aim well below what was sent.
            limit = min(limit or tokens, tokens) // 2
        return self.compact(info, tokens, limit, "context_length" if info.error is not None else "threshold")

    # -- one compaction -------------------------------------------------------------------------------

    def compact(self, info: RequestInfo, tokens: int, limit: int, trigger: str) -> list[Message] | None:
        messages = info.history.messages
        head = [messages[0]] if messages and messages[0].get("role") == "system" else []
        groups = turns(messages[len(head):])
        keep_budget = min(self.settings.keep_recent, limit // 2)
        cut = len(groups) - 1  # the last turn is always kept
        used = self._tokens(groups[cut]) if groups else 0
        while cut > 0 and used + self._tokens(groups[cut - 1]) <= keep_budget:
            cut -= 1
            used += self._tokens(groups[cut])
        if cut == 0 and trigger == "context_length":
            cut = len(groups) - 1  # refused although it all looked small: keep only the latest turn
        old = [m for group in groups[:cut] for m in group]
        kept = [m for group in groups[cut:] for m in group]
        if not old:
            return None  # nothing older than the latest turn: compaction cannot help
        for listener in self.before:
            listener(trigger)
        target = int(limit * AFTER_SHARE)
        if trigger == "threshold":
            elided, count = _elide(old)
            after = self._size([*head, *elided, *kept], info.tools)
            if count and after <= target:
                self._report(CompactionRecord(trigger, "elide", 0, len(head) + len(old) + len(kept), count,
                                              tokens, after))
                return [*head, *elided, *kept]
        summary, usage, error = self._summarise(old, limit)
        stage = "summary" if error is None else "drop"
        replaced = [*head, {"role": "user", "content": f"{SUMMARY_PREFIX}\n{summary}"}, *kept]
        self._report(CompactionRecord(trigger, stage, len(old), len(kept), 0, tokens,
                                      self._size(replaced, info.tools), usage, error))
        return replaced

    def _summarise(self, old: list[Message], limit: int) -> tuple[str, StepUsage | None, str | None]:
        transcript = _transcript(old, max_chars=int(limit * self.meter.chars_per_token * 0.8))
        request = [{"role": "system", "content": SUMMARISER}, {"role": "user", "content": transcript}]
        last_request = next((m.get("content") for m in reversed(old) if m.get("role") == "user"
                             and not str(m.get("content", "")).startswith(SUMMARY_PREFIX)), None)
        quoted = (f"\n\nThe user's last request before this point, verbatim:\n{_clip(str(last_request), QUOTE_CHARS)}"
                  if last_request else "")
        try:
            turn = self.model.complete(request, [])
        except ModelError as exc:
            note = (f"(nami could not summarise the {len(old)} earlier messages: {exc}. They were dropped; "
                    "ask the user if something is missing.)")
            return note + quoted, None, str(exc)
        if turn.usage is not None:
            usage = StepUsage(turn.usage.prompt_tokens, turn.usage.cached_tokens, turn.usage.completion_tokens,
                              turn.usage.reasoning_tokens, kind="compaction")
        else:
            usage = StepUsage(estimate_tokens(request_chars(request, []), self.meter.chars_per_token),
                              completion_tokens=estimate_tokens(len(turn.content or ""), self.meter.chars_per_token),
                              estimated=True, kind="compaction")
        return (turn.content or "").strip() + quoted, usage, None

    def _report(self, record: CompactionRecord) -> None:
        for listener in self.listeners:
            listener(record)

    def _tokens(self, messages: list[Message]) -> int:
        return estimate_tokens(request_chars(messages, []), self.meter.chars_per_token)

    def _size(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        return estimate_tokens(request_chars(messages, tools), self.meter.chars_per_token)


def _elide(messages: list[Message]) -> tuple[list[Message], int]:
    """Large tool results replaced by a note; everything else as it was."""
    out: list[Message] = []
    count = 0
    for message in messages:
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and len(content) > ELIDE_OVER:
            out.append({**message, "content": ELIDED.format(chars=len(content))})
            count += 1
        else:
            out.append(message)
    return out, count


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {plural(len(text) - limit, 'character')} …]\n{text[-half:]}"


def _transcript(messages: list[Message], *, max_chars: int) -> str:
    """The older messages as text for the summariser, within ``max_chars`` (the latest part kept)."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content else ""
        if role == "tool":
            lines.append(f"[tool result {message.get('tool_call_id')}]\n{_clip(text, RESULT_CHARS)}")
            continue
        if text:
            lines.append(f"[{role}]\n{_clip(text, MESSAGE_CHARS)}")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            lines.append(f"[tool call {call.get('id')}] {function.get('name')} "
                         f"{_clip(str(function.get('arguments', '')), MESSAGE_CHARS)}")
    text = "\n\n".join(lines)
    if len(text) > max_chars > 0:
        text = "[… the oldest part is omitted …]\n" + text[-max_chars:]
    return text
