"""``nami replay SESSION``: the session's user turns run again, in order, with the model and settings
chosen now, each tool call served from the recording instead of run.

A tool source like the others (the registry's prepared calls, wrapped): a call with the same tool and the
same arguments (defaults applied, on both sides) gets the recorded result, in recorded order where the
same call was made twice. A call the recording lacks is not run: its result says so; with ``live="read"``
a read tool runs for real, in its sandbox as always; nothing else ever runs. Every call is decided by the
same guards as any run (app/guards.py): a stricter config refuses; a call it would ask about is reported
"would ask", not served (nobody is asked, as in a dry run). No hook runs, no audit line or session is
written, nothing is queued or notified.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nami_yaml.agent.events import DryRunEvent, Event
from nami_yaml.agent.toolbox import READ, PreparedCall, Toolbox
from nami_yaml.app.dry_run import DryRunCall
from nami_yaml.app.options import AgentOptions
from nami_yaml.policy.permissions import SPAWNS
from nami_yaml.result import ToolResult
from nami_yaml.runners.output import MAX_SAVED_OUTPUT, cut_saved_text
from nami_yaml.runners.spill import read_saved_output
from nami_yaml.session.loader import load_session
from nami_yaml.session.replay import RecordedCall, Recording, call_key

LIVE_CHOICES = ("read",)
RESULT_LINES = 3  # of each call's result, in the report
NOT_RECORDED = ("replay: this call is not in the recording, so it was not run (a replay runs nothing; "
                "`--live read` runs read tools)")
WOULD_ASK = "replay: the policy would ask a person about this call; nobody is asked in a replay, so it was not served"


class ReplayCall(DryRunCall):
    """A prepared call whose ``run`` serves the recorded result."""

    def __init__(self, inner: PreparedCall, source: ReplaySource):
        super().__init__(inner)
        self.source = source
        self.outcome = "would run"
        self.recorded: RecordedCall | None = None

    def entry_details(self, result: ToolResult) -> dict[str, Any]:
        lines = result.content.splitlines()
        return {"arguments": self.arguments, "recorded_call": self.recorded.id if self.recorded else None,
                "result": "\n".join(lines[:RESULT_LINES]) + ("\n…" if len(lines) > RESULT_LINES else "")}

    def run(self) -> ToolResult:
        if self.would_ask is not None:
            self.outcome = "would ask"
            return ToolResult(WOULD_ASK, ok=False, details={"replay": self.outcome})
        self.recorded = self.source.take(self.name, self.arguments)
        if self.recorded is not None and self.recorded.result is not None:
            self.outcome = "served"
            details: dict[str, Any] = {"replay": self.outcome, "recorded_call": self.recorded.id}
            content = self.recorded.result
            max_output = getattr(getattr(self.inner, "invocation", None), "max_output", None)
            whole = whole_output(content, max_output) if isinstance(max_output, int) else None
            if whole is not None:  # cut when recorded: served from the whole output, as this config caps it
                content, details["whole_output"] = whole
            return ToolResult(content, ok=not self.recorded.result.startswith("Error:"), details=details)
        if self.source.live == READ and self.risk == READ and self.kind != SPAWNS:
            self.outcome = "ran live"
            result = self.inner.run()
            result.details["replay"] = self.outcome
            return result
        self.outcome = "not in the recording"
        return ToolResult(NOT_RECORDED, ok=False, details={"replay": self.outcome})


# The line a capped output carries between its head and its tail (runners/output.py omission_marker), when
# the whole output was saved.
_CUT = re.compile(r"\n\.\.\. \[[\d,]+ (?:bytes|characters) omitted; full output: (?P<path>/[^\n\]]+)\] \.\.\.\n")


def whole_output(recorded: str, max_chars: int) -> tuple[str, str] | None:
    """A recorded result that was cut, rebuilt from the whole output its saved file still holds and capped
    at ``max_chars`` (this run's ``max_output`` for the tool), with the file's path; None where it was not
    cut, or the file is gone, not nami's, or no longer the output the recording shows the ends of."""
    found = list(_CUT.finditer(recorded))
    if len(found) != 1:
        return None
    path = Path(found[0].group("path"))
    whole = read_saved_output(path, MAX_SAVED_OUTPUT)
    if whole is None:
        return None
    head = recorded[:found[0].start()]
    head = head[:-1] if head.endswith(" ") and not whole.startswith(head) else head  # the join's space
    after = recorded[found[0].end():]
    after = after[1:] if after[:1] in ("\n", " ") else after  # the join's newline or space
    stdout = whole.rstrip()
    # After the tail come the sections of the result that were not cut: [stderr], [exit code: N], ...
    ends = [i for i in range(len(after), -1, -1) if i == len(after) or after.startswith("\n[", i)]
    tail_end = next((i for i in ends if stdout.endswith(after[:i])), None)
    if not whole.startswith(head) or tail_end is None:
        return None
    return cut_saved_text(stdout, max_chars, path) + after[tail_end:], str(path)


class ReplayToolbox:
    def __init__(self, inner: Toolbox, source: ReplaySource):
        self.inner = inner
        self.source = source

    def definitions(self) -> list[dict[str, Any]]:
        return self.inner.definitions()

    def prepare(self, name: str, raw_arguments: str) -> PreparedCall | ToolResult:
        self.source.index(self.inner)
        prepared = self.inner.prepare(name, raw_arguments)
        return prepared if isinstance(prepared, ToolResult) else ReplayCall(prepared, self.source)


@dataclass
class ReplaySource:
    """The recorded results, by call, handed out in order; ``live``: "read" lets read tools run."""

    recording: Recording
    live: str | None = None
    _queues: dict[str, deque[RecordedCall]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def toolbox(self, inner: Toolbox) -> ReplayToolbox:
        return ReplayToolbox(inner, self)

    def index(self, toolbox: Toolbox) -> None:
        """Key the recorded calls by their arguments as this registry validates them (defaults applied),
        once; a recorded call that no longer validates keeps the arguments the model sent."""
        with self._lock:
            if self._queues is not None:
                return
            self._queues = {}
            for call in self.recording.calls:
                self._queues.setdefault(recorded_key(toolbox, call), deque()).append(call)

    def take(self, name: str, arguments: dict[str, Any]) -> RecordedCall | None:
        with self._lock:
            queue = (self._queues or {}).get(call_key(name, arguments))
            return queue.popleft() if queue else None


def recorded_key(toolbox: Toolbox, call: RecordedCall) -> str:
    prepared = toolbox.prepare(call.name, call.raw_arguments)
    if not isinstance(prepared, ToolResult):
        return call_key(call.name, prepared.arguments)
    try:
        return call_key(call.name, json.loads(call.raw_arguments or "{}"))
    except ValueError:
        return call_key(call.name, call.raw_arguments)


# -- running a replay ----------------------------------------------------------------------------------

@dataclass
class TurnReplay:
    prompt: str
    status: str
    answer: str | None  # the new run's
    recorded_answer: str | None
    calls: list[dict[str, Any]]  # each call of the new run: tool, arguments, outcome, by, result's first line


@dataclass
class ReplayReport:
    session: str
    turns: list[TurnReplay]
    recorded_calls: list[dict[str, Any]]  # tool and arguments of each recorded call, in order
    first_difference: dict[str, Any] | None  # the first call that differs from the recording, or None
    not_recorded: list[dict[str, Any]]  # the new run's calls the recording lacks
    unused: list[dict[str, Any]]  # recorded calls the new run did not make

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "diverged": self.diverged,
                "first_difference": self.first_difference, "not_recorded": self.not_recorded,
                "unused_recorded_calls": self.unused, "recorded_calls": self.recorded_calls,
                "turns": [vars(turn) for turn in self.turns]}

    @property
    def diverged(self) -> bool:
        return self.first_difference is not None or any(t.answer != t.recorded_answer for t in self.turns)


def replay_session(path: Path, options: AgentOptions, live: str | None = None) -> ReplayReport:
    """Replay the session file at ``path`` with an agent built from ``options`` (its model, config, named
    agent); nothing is recorded. SessionError for a file that cannot be read."""
    from nami_yaml.app.agent import build_agent

    session = load_session(path)
    recording = Recording.of(session)
    source = ReplaySource(recording, live)
    taken: list[list[dict[str, Any]]] = []
    forward = options.on_event

    def on_event(event: Event) -> None:
        if isinstance(event, DryRunEvent):
            taken.append(event.calls)
        if forward is not None:
            forward(event)

    agent = build_agent(replace(options, replay=source, dry_run=False, record_session=False, resume=None,
                                on_event=on_event, via="replay"))
    turns: list[TurnReplay] = []
    try:
        for number, prompt in enumerate(recording.turns):
            before = len(taken)
            outcome = agent.run(prompt)
            calls = [call for batch in taken[before:] for call in batch]
            turns.append(TurnReplay(prompt, outcome.status, outcome.final_text, recording.answers[number], calls))
    finally:
        agent.close()
    return compare(session.id, recording, turns)


def compare(session: str, recording: Recording, turns: list[TurnReplay]) -> ReplayReport:
    recorded = [{"tool": c.name, "arguments": _arguments(c.raw_arguments), "turn": c.turn + 1, "id": c.id}
                for c in recording.calls]
    made = [{**call, "turn": number + 1} for number, turn in enumerate(turns) for call in turn.calls]
    first = None
    for index in range(max(len(recorded), len(made))):
        was = recorded[index] if index < len(recorded) else None
        now = made[index] if index < len(made) else None
        # The same call in the same place: served the result recorded there.
        if was is None or now is None or now.get("recorded_call") != was["id"]:
            first = {"index": index + 1, "recorded": was, "replayed": now}
            break
    used = {call.get("recorded_call") for call in made}
    unused = [recorded[i] for i, c in enumerate(recording.calls) if c.id not in used]
    not_recorded = [call for call in made if call.get("outcome") in ("not in the recording", "ran live")]
    return ReplayReport(session, turns, recorded, first, not_recorded, unused)


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw
