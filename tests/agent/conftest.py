"""A small real Toolbox of Python tools for the loop tests, and the fake endpoint + real client fixtures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nami_yaml.agent import AgentLoop, Decision, Event, EventBus, Hooks
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext
from nami_yaml.testing.fake_server import FakeOpenAIServer

Func = Callable[["Toolbox", dict[str, Any]], ToolResult]


@dataclass
class Tool:
    name: str
    risk: str
    parameters: dict[str, Any]
    func: Func
    stops: bool = False  # run() returns soon once cancelled: the loop may run it on its own thread


@dataclass
class Prepared:
    toolbox: Toolbox
    tool: Tool
    arguments: dict[str, Any]

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def risk(self) -> str:
        return self.tool.risk

    kind = "python"

    @property
    def stops_when_cancelled(self) -> bool:
        return self.tool.stops

    def describe(self) -> str:
        return f"{self.name} " + " ".join(f"{k}={v}" for k, v in sorted(self.arguments.items()))

    def plan(self) -> dict[str, Any]:
        return {"function": self.tool.func.__name__, "arguments": self.arguments}

    def cancel(self) -> None:
        self.toolbox.ctx.cancel.set()

    def run(self) -> ToolResult:
        try:
            return self.tool.func(self.toolbox, self.arguments)
        except Exception as exc:
            return ToolResult.error(str(exc))


@dataclass
class Toolbox:
    """Python tools with JSON-Schema validation; records what ran and when."""

    ctx: RuntimeContext
    tools: dict[str, Tool] = field(default_factory=dict)
    intervals: list[tuple[str, float, float]] = field(default_factory=list)  # (label, start, end)
    ran: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)  # the thread each blocking tool ran on
    pids: list[int] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)  # frees the stubborn tool
    definitions_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, risk: str, properties: dict[str, Any], func: Func,
            required: list[str] | None = None, stops: bool = False) -> None:
        schema = {"type": "object", "properties": properties, "required": required or list(properties),
                  "additionalProperties": False}
        self.tools[name] = Tool(name, risk, schema, func, stops)

    def definitions(self) -> list[dict[str, Any]]:
        self.definitions_calls += 1
        return [
            {"type": "function",
             "function": {"name": t.name, "description": f"{t.name} ({t.risk})", "parameters": t.parameters}}
            for t in sorted(self.tools.values(), key=lambda t: t.name)
        ]

    def prepare(self, name: str, raw_arguments: str) -> Prepared | ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult.error(f"unknown tool {name!r}; available: {', '.join(sorted(self.tools))}")
        try:
            args = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult.error(f"arguments of {name} are not valid JSON: {exc}")
        try:
            jsonschema.validate(args, tool.parameters)
        except jsonschema.ValidationError as exc:
            return ToolResult.error(f"invalid arguments for {name}: {exc.message}")
        return Prepared(self, tool, args)

    def record(self, label: str, start: float, end: float) -> None:
        with self._lock:
            self.intervals.append((label, start, end))


def _sleep_read(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    start = time.monotonic()
    box.ctx.cancel.wait(args["seconds"])
    box.record(args["label"], start, time.monotonic())
    return ToolResult(f"slept {args['label']}")


def _echo(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    box.ran.append(f"echo:{args['text']}")
    return ToolResult(args["text"])


def _fail(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    box.ran.append("fail")
    return ToolResult.error("the disk is on fire", code=7)


def _write_note(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    start = time.monotonic()
    path = box.ctx.workspace / args["path"]
    # A real file write plus a pause long enough that overlapping writes would show in the intervals.
    path.write_text(args["text"])
    time.sleep(0.3)
    box.record(args["path"], start, time.monotonic())
    box.ran.append(f"write:{args['path']}")
    return ToolResult(f"wrote {len(args['text'])} chars to {args['path']}")


def _read_note(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    path: Path = box.ctx.workspace / args["path"]
    box.ran.append(f"read:{args['path']}")
    return ToolResult(path.read_text() if path.exists() else "Error: no such file", ok=path.exists())


def _block(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    """Runs a real child in its own process group and kills the group when the session is cancelled."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    box.pids.append(proc.pid)
    box.threads.append(threading.current_thread().name)
    box.ran.append("block:started")
    while proc.poll() is None:
        if box.ctx.cancel.wait(0.05):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return ToolResult.error("cancelled; partial output: tick", signal="SIGKILL")
    return ToolResult("finished by itself")


def _stubborn(box: Toolbox, args: dict[str, Any]) -> ToolResult:
    """Ignores the cancel switch, like a badly written Python tool."""
    box.ran.append("stubborn:started")
    box.threads.append(threading.current_thread().name)
    # Short waits, not one long one: a Ctrl-C that lands between CPython running the signal handlers of an
    # interrupted wait and waiting again is only handled when the wait ends (on the loop thread).
    deadline = time.monotonic() + 60
    while not box.release.wait(0.05) and time.monotonic() < deadline:
        pass
    box.ran.append("stubborn:ended")
    return ToolResult("finally done")


@pytest.fixture
def toolbox(ctx: RuntimeContext) -> Toolbox:
    box = Toolbox(ctx)
    box.add("sleep_read", "read", {"seconds": {"type": "number"}, "label": {"type": "string"}}, _sleep_read)
    box.add("nap", "read", {"seconds": {"type": "number"}, "label": {"type": "string"}}, _sleep_read, stops=True)
    box.add("echo", "read", {"text": {"type": "string"}}, _echo)
    box.add("fail", "read", {}, _fail)
    box.add("write_note", "write", {"path": {"type": "string"}, "text": {"type": "string"}}, _write_note)
    box.add("write_note_here", "write", {"path": {"type": "string"}, "text": {"type": "string"}}, _write_note,
            stops=True)
    box.add("read_note", "read", {"path": {"type": "string"}}, _read_note)
    box.add("block", "exec", {}, _block)
    box.add("block_here", "exec", {}, _block, stops=True)
    box.add("stubborn", "read", {}, _stubborn)
    box.add("stubborn_here", "read", {}, _stubborn, stops=True)  # says it stops, and does not
    return box


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@dataclass
class Harness:
    """One loop wired to the real client, the fake server and the test toolbox; records events."""

    server: FakeOpenAIServer
    toolbox: Toolbox
    ctx: RuntimeContext
    events: list[Event] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    answer: bool = True

    def approve(self, call: Any, pending: Decision) -> bool:
        self.approvals.append(call.describe())
        return self.answer

    def loop(self, **options: Any) -> AgentLoop:
        from nami_yaml.model.client import OpenAIChatModel

        model = OpenAIChatModel(model="fake-model", base_url=self.server.base_url, api_key="sk-test",
                                stream=options.pop("stream", True), max_retries=options.pop("max_retries", 0),
                                max_response_bytes=options.pop("max_response_bytes", 4_000_000))
        hooks = options.pop("hooks", None) or Hooks(ask=self.approve)
        return AgentLoop(model=model, toolbox=self.toolbox, hooks=hooks, cancel=self.ctx.cancel,
                         events=EventBus(self.events.append), **options)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.events if e.type == kind]


@pytest.fixture
def harness(server: FakeOpenAIServer, toolbox: Toolbox, ctx: RuntimeContext) -> Harness:
    return Harness(server, toolbox, ctx)
