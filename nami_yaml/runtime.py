"""What a running tool may know about its run: the workspace, its limits, the host environment and what to
keep from it, the saved-output folder, the cancel switch, and the text it may read on demand. Built once
per agent by nami_yaml.app; nothing here runs anything."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nami_yaml.cancel import CancelToken
from nami_yaml.env_secrets import EnvScrub
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.sensitive_paths import ProtectedPaths
from nami_yaml.setting_defaults import LIMITS, TOOLS
from nami_yaml.xdg import default_state_dir


class SkillText(Protocol):
    """A skill as the ``skill`` built-in reads it (config.skills.Skill is one)."""

    @property
    def name(self) -> str: ...

    @property
    def folder(self) -> Path: ...

    def body(self) -> str: ...


class CallProgress:
    """Where one running call says how far it is (an MCP server's progress notifications), from whatever
    thread: the loop connects it to the call's line on the status line; unconnected, it is dropped."""

    __slots__ = ("_sink",)

    def __init__(self) -> None:
        self._sink: Callable[[str], None] | None = None

    def connect(self, sink: Callable[[str], None]) -> None:
        self._sink = sink

    def __call__(self, text: str) -> None:
        sink = self._sink
        if sink is not None:
            sink(text)


class LoadedGroups:
    """The on-demand tool groups the model has loaded in this conversation, in the order it loaded them;
    shared by every call of one agent (the load_tools built-in adds, the toolbox reads)."""

    def __init__(self, names: tuple[str, ...] = ()):
        self._names = list(names)
        self._lock = threading.Lock()

    @property
    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._names)

    def add(self, groups: list[str]) -> list[str]:
        """Load ``groups``; returns those that were not loaded yet."""
        with self._lock:
            new = [group for group in dict.fromkeys(groups) if group not in self._names]
            self._names.extend(new)
            return new

    def clear(self) -> None:
        with self._lock:
            self._names.clear()


@dataclass(frozen=True)
class ToolSettings:
    """Limits and knobs for tools, from agent.yaml ``limits:`` and ``tools:`` (app/project.py); the defaults
    are the settings' (nami_yaml.setting_defaults), and safe."""

    default_timeout: float = float(LIMITS["tool_timeout"])
    max_output: int = LIMITS["max_output"]  # bytes of a tool's output the model sees (head + tail)
    max_saved_output: int = LIMITS["max_saved_output"]  # bytes of one call's output saved; past it saving stops
    bash_timeout: float = float(TOOLS["bash"]["timeout"])
    bash_max_timeout: float = float(TOOLS["bash"]["max_timeout"])
    fetch_allow_hosts: tuple[str, ...] = tuple(TOOLS["fetch_url"]["allow_hosts"])
    fetch_max_bytes: int = TOOLS["fetch_url"]["max_bytes"]
    fetch_timeout: float = float(TOOLS["fetch_url"]["timeout"])


@dataclass(frozen=True)
class Target:
    """One of the project's environments (agent.yaml ``targets:``): the variables a call on it runs with,
    and the values its ``{target.NAME}`` placeholders (``$NAMI_TARGET_NAME`` in scripts) stand for."""

    name: str
    env: Mapping[str, str] = field(default_factory=dict)
    vars: Mapping[str, str] = field(default_factory=dict)
    approvals_required: int = 1  # different people who must approve a call on it that asks (approvals.required)


@dataclass(frozen=True)
class TargetSet:
    """The project's targets in declaration order, the one a call gets when the model names none
    (``default_target``), and the one every call runs on (``pinned``: ``nami run --target``)."""

    targets: tuple[Target, ...] = ()
    default: str | None = None
    pinned: str | None = None

    def names(self) -> list[str]:
        return [target.name for target in self.targets]

    def get(self, name: object) -> Target | None:
        return next((target for target in self.targets if target.name == name), None)

    def __bool__(self) -> bool:
        return bool(self.targets)


@dataclass(frozen=True)
class RuntimeContext:
    """The fixed workspace root, settings, and the cancel switch (the run's, or one call's: ``for_call``).

    Frozen: nothing changes it after it is built. What changes over an agent's life is a new context made
    with ``dataclasses.replace`` by whoever owns it (a session's saved-output folder, the tool groups once
    MCP servers started); what changes within a conversation is an object of its own, shared on purpose
    (``loaded_groups``, ``cancel``).

    ``workspace`` is resolved once at start; nothing the model sends can change it.
    ``protected_env`` names host variables never given to a tool, even when a tool lists them in
    ``env_passthrough`` (the model's API key variable, for one).
    """

    workspace: Path
    settings: ToolSettings = field(default_factory=ToolSettings)
    host_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    protected_env: frozenset[str] = frozenset()
    env_scrub: EnvScrub = field(default_factory=EnvScrub)
    # Asked before a module from a tool folder is imported (the file's path): why it must not run (trust
    # never covered it, or the trusted code changed since), or None. Set when agent.yaml needed trust.
    code_check: Callable[[Path], str | None] | None = None
    # Where a write is code execution (the config, tool folders, .git/, ...): such a write needs the
    # approval an exec call needs. The defaults protect the folder and file names every project has.
    protected_paths: ProtectedPaths = field(default_factory=ProtectedPaths)
    spill_dir: Path = field(default_factory=lambda: default_state_dir() / "output")
    # agent.yaml's and the user config's ``sandbox:``: every process a tool starts runs in the sandbox
    # runners/sandbox plans from these and the tool's own keys (by default: where bubblewrap works).
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    cancel: CancelToken = field(default_factory=CancelToken)
    # Text the model reads only when it asks (the tool_docs and skill built-ins): tools' docs by tool
    # name, and the agent's skills by name.
    # (runners.options.DocSource values: runtime imports only the leaves, never the runners)
    tool_docs: Mapping[str, Any] = field(default_factory=dict)
    skills: Mapping[str, SkillText] = field(default_factory=dict)
    # Tools sent on demand: each group's tool names (what load_tools offers), and the groups loaded so far.
    tool_groups: Mapping[str, list[str]] = field(default_factory=dict)
    loaded_groups: LoadedGroups = field(default_factory=LoadedGroups)
    # The programs rules deny by name alone (``command: [rm]``, for the bash tool): masked in the sandbox
    # of its calls (runners/sandbox/masks.py), so no spelling or interpreter runs them.
    denied_programs: tuple[str, ...] = ()
    tool_names: frozenset[str] = frozenset()  # every tool of the agent (a skill's allowed-tools are looked up)
    # The target this call runs on (agent.yaml targets:), set by the executor for a tool that runs on one.
    target: Target | None = None
    # Trace context (W3C ``traceparent``, ``tracestate``) for what a call starts, when runs are traced: the
    # agent's context holds an empty dict, and each call's context a dict of its own that a tracer fills once
    # the call is decided (agent.events.ToolDecided); its process gets TRACEPARENT, an MCP request the header.
    # None: not traced, nothing added anywhere.
    trace: dict[str, str] | None = None
    # How far the call is, for people (set per call by ``for_call``; None in the agent's own context).
    progress: CallProgress | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "workspace", Path(self.workspace).resolve())

    def for_call(self, target: Target | None = None) -> RuntimeContext:
        """The same context with a cancel switch of the call's own, also set when the run is cancelled, and
        the call's target (None: the tool runs on none). A copy of the fields as they are, not ``replace()``:
        the workspace was resolved once, and resolving it again at every call was most of preparing one; nor
        ``copy.copy()``, whose generic path through ``__reduce_ex__`` cost more than the rest (bench/: per step)."""
        call = object.__new__(type(self))
        fields = call.__dict__  # frozen: filled in directly, as __init__ would, before anyone holds it
        fields.update(self.__dict__)
        fields["cancel"], fields["target"], fields["progress"] = self.cancel.child(), target, CallProgress()
        if self.trace is not None:
            fields["trace"] = {}
        return call
