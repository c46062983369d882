"""One options value for building an agent, whoever builds it: ``nami run`` and ``chat`` (from their flags),
batch workers (from a task), ``mcp serve``, and the Python API (``Agent.from_config``'s keywords)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nami_yaml.app.project import Trust
from nami_yaml.project_request import ProjectRequest

if TYPE_CHECKING:
    from nami_yaml.agent.events import Event
    from nami_yaml.agent.hooks import BeforeTool
    from nami_yaml.model.types import Model
    from nami_yaml.policy.approval import Approver

EventSink = Callable[["Event"], None]


@dataclass
class AgentOptions:
    """What to build. Settings given here override the files as command-line flags do."""

    # Where the configuration comes from.
    config: str | Path | None = None  # else $NAMI_CONFIG, else the nearest agent.yaml from ``cwd`` up
    cwd: Path | None = None
    env: Mapping[str, str] | None = None  # the environment to read (default: this process's)
    discover: bool = True  # look for an agent.yaml when ``config`` is not given
    tools: Sequence[str] = ()  # extra tool files, folders or globs
    trust: Trust = None  # see nami_yaml.app.project.Trust
    target: str | None = None  # every call of a targeted tool runs on this target (agent.yaml targets:)
    # Settings, as flags.
    model: str | None = None
    base_url: str | None = None
    max_steps: int | None = None
    stream: bool | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)  # any other dotted key: {"workspace": …}
    # The model client: None builds the OpenAI-compatible one the settings describe (a ScriptedModel, say).
    client: Model | None = None
    # Who answers the policy's questions, and what runs.
    approve: Approver | None = None  # None: nobody can be asked, so questions are refused
    assume_yes: bool = False  # --yes: every question is a yes (never a deny)
    approve_risks: Collection[str] = ()  # --approve read,write
    dry_run: bool = False
    # A replay (app/replay.py ReplaySource): calls get a recorded session's results; nothing runs or is recorded.
    replay: Any = None
    # A structured answer: a JSON Schema (a mapping, inline JSON, or a file relative to ``cwd``) the final
    # answer must match (app/answers.py). None: agent.yaml's answer_schema, if any; False: none at all.
    answer_schema: Mapping[str, Any] | str | bool | None = None
    before_tool: Sequence[BeforeTool] = ()  # more opinions on every call (the strictest wins)
    # Reporting.
    on_event: EventSink | None = None
    via: str = "api"  # recorded in every audit line: run, chat, batch, mcp, api
    session_id: str | None = None  # the audit log's id for these calls (a recorded session uses its own)
    # The project's MCP servers: None starts them when the agent is built (batch starts them after setup).
    start_servers: bool | None = None
    # A named agent of the project (agent.yaml `agents:`) to run instead of the top-level one.
    agent: str | None = None
    # Sessions: record a new one, or continue one ("" is the latest of this workspace).
    record_session: bool = False
    resume: str | None = None
    force: bool = False  # continue a session recorded in another workspace or with other tools
    # Traced runs only: a trace context (W3C traceparent) each run's trace links to (a batch's; app/tracing.py).
    trace_link: Mapping[str, str] | None = None

    def request(self) -> ProjectRequest:
        """Which project, as every opener takes it."""
        return ProjectRequest(config=None if self.config is None else str(self.config), cwd=self.cwd, env=self.env,
                              tools=tuple(self.tools), target=self.target, agent=self.agent, flags=self.flags(),
                              discover=self.discover)

    def flags(self) -> dict[str, Any]:
        """The settings given here, as the flags layer of the effective configuration."""
        named = {"model.name": self.model, "model.base_url": self.base_url, "limits.max_steps": self.max_steps,
                 "model.stream": self.stream}
        return {**self.settings, **{key: value for key, value in named.items() if value is not None}}
