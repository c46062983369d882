"""The public Python API: an agent built from an agent.yaml (or plain values), run from a script, a
notebook, a CI job or a web service. The CLI is one user of it; nothing here prints or prompts."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from nami_yaml.agent.events import HISTORY_EVENTS, ErrorEvent, Event, EventBus, FinalEvent, NoticeEvent
from nami_yaml.agent.history import History
from nami_yaml.agent.hooks import BeforeTool
from nami_yaml.agent.loop import AgentLoop, RunOutcome
from nami_yaml.app.economy import token_economy
from nami_yaml.app.project import Project, Trust, open_project
from nami_yaml.app.safety import Safeguards
from nami_yaml.app.sessions import record_session, resume_session
from nami_yaml.config.settings import Effective, with_model
from nami_yaml.errors import ConfigError
from nami_yaml.model.types import Model
from nami_yaml.policy.approval import Approver
from nami_yaml.session.cost import CostLimit, Pricing
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.store import SessionStore
from nami_yaml.session.writer import SessionWriter

EventSink = Callable[[Event], None]


class Agent:
    """A model, a registry of tools and a conversation. ``run`` returns the outcome; ``stream`` yields the
    events ``nami run --json`` prints. ``approve`` answers calls the policy asks about (None: nobody can be
    asked, so they are refused); ``assume_yes`` answers every such question yes, ``approve_risks`` those
    of the given risks (never a deny). ``dry_run``: no tool runs; each call's result says what would have.
    Every call is recorded in the audit log under ``session_id`` (generated unless given)."""

    def __init__(self, project: Project, model: Model, *, approve: Approver | None = None,
                 assume_yes: bool = False, approve_risks: Collection[str] = (), dry_run: bool = False,
                 on_event: EventSink | None = None, before_tool: Sequence[BeforeTool] = (),
                 session_id: str | None = None, via: str = "api"):
        self.project = project
        self.model = model
        self.bus = EventBus(on_event)
        get = project.settings.get
        self.guard = Safeguards(project, approve=approve, assume_yes=assume_yes, approve_risks=approve_risks,
                                dry_run=dry_run, session_id=session_id, via=via,
                                on_error=lambda message: self.bus(ErrorEvent(message)))
        economy = token_economy(project.settings, model)
        self.meter, self.compactor, self.pricing = economy.meter, economy.compactor, economy.pricing
        self.bus.add(self.meter)
        self.hooks = self.guard.hooks(before_tool)
        # Tool sources' problems (an MCP server that did not start, or died) are reported before a request.
        self.hooks.before_request = [self._report_notices, *economy.before_request]
        self.hooks.after_run = list(economy.after_run)
        self.loop = AgentLoop(
            model=model, toolbox=self.guard.toolbox(project.executor()), hooks=self.hooks,
            max_steps=int(get("limits.max_steps")), max_parallel_tools=int(get("limits.max_parallel_tools")),
            cancel=project.context.cancel, events=self.guard.events(self.bus),  # type: ignore[arg-type]
        )
        self.system_message = {"role": "system", "content": project.system_prompt()}
        self.history = History([dict(self.system_message)], emit=self.bus)
        self._session: SessionWriter | None = None
        self._lock = threading.Lock()  # one run at a time: the history is one conversation
        self._owns_project = False  # from_config opened it, so close() closes it (its MCP servers)

    @classmethod
    def from_config(cls, config: str | Path | None = None, *, cwd: Path | None = None,
                    env: Mapping[str, str] | None = None, model: str | None = None, base_url: str | None = None,
                    max_steps: int | None = None, stream: bool | None = None, tools: Sequence[str] = (),
                    client: Model | None = None, approve: Approver | None = None, assume_yes: bool = False,
                    approve_risks: Collection[str] = (), dry_run: bool = False,
                    trust: Trust = None, on_event: EventSink | None = None) -> Agent:
        """Load ``config`` (else $NAMI_CONFIG, else the nearest agent.yaml from ``cwd`` up, else defaults).
        ``model``, ``base_url``, ``max_steps`` and ``stream`` override the files as the CLI flags do;
        ``tools`` adds tool files; ``client`` replaces the OpenAI-compatible client (e.g. a ScriptedModel)."""
        flags = {"model.name": model, "model.base_url": base_url, "limits.max_steps": max_steps,
                 "model.stream": stream}
        project = open_project(config, cwd=cwd, env=env, flags=flags, extra_tools=tools, trust=trust, will_run=True)
        try:
            agent = cls(project, client or build_model(project.settings), approve=approve, assume_yes=assume_yes,
                        approve_risks=approve_risks, dry_run=dry_run, on_event=on_event)
        except BaseException:
            project.close()
            raise
        agent._owns_project = True
        return agent

    # -- what is inside -------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The id the audit log records this agent's calls under. Sessions (resume) may set their own."""
        return self.guard.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self.guard.session_id = value

    @property
    def settings(self) -> Effective:
        return self.project.settings

    @property
    def registry(self) -> Any:
        return self.project.registry

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.history.messages

    # -- running --------------------------------------------------------------------------------------

    def run(self, task: str, *, on_event: EventSink | None = None) -> RunOutcome:
        """Add ``task`` as the user's message and run until the model answers or the run stops. Never
        raises for model or tool failures: the outcome's status and error say what happened."""
        with self._lock:
            if on_event is not None:
                self.bus.add(on_event)
            try:
                self.history.append({"role": "user", "content": task})
                return self.loop.run(self.history)
            finally:
                if on_event is not None:
                    self.bus.remove(on_event)

    def stream(self, task: str, *, history_events: bool = False) -> Iterator[Event]:
        """Run ``task`` and yield its events as they happen, ending with the ``final`` event. Stopping
        the iteration early (or Ctrl-C while waiting) cancels the run."""
        events: queue.Queue[Event | None] = queue.Queue()

        def sink(event: Event) -> None:
            if history_events or event.type not in HISTORY_EVENTS:
                events.put(event)

        def work() -> None:
            try:
                self.run(task, on_event=sink)
            finally:
                events.put(None)

        worker = threading.Thread(target=work, name="nami-agent-run", daemon=True)
        worker.start()
        finished = False
        try:
            while (event := events.get()) is not None:
                yield event
                finished = finished or isinstance(event, FinalEvent)
        finally:
            if not finished:
                self.cancel()
            worker.join(timeout=self.loop.interrupt_grace + 5)

    def _report_notices(self, info: Any) -> None:
        sandbox = self.project.sandbox_notice()
        if sandbox is not None:
            self.bus(NoticeEvent(sandbox))
        for message in self.project.take_notices():
            self.bus(ErrorEvent(message))

    def cancel(self) -> None:
        """Stop the current run from another thread: tools are killed, every call gets a result."""
        self.loop.cancel.set()

    def use_model(self, name: str) -> None:
        """Talk to model ``name`` from the next request on, on the same endpoint with the same key (chat's
        /model). Costs are priced for that name: agent.yaml's model.pricing, else the provider's list price."""
        with self._lock:
            settings = with_model(self.project.settings, name)
            pricing = Pricing.from_settings(settings.get("model.pricing"))
            limits = [hook for hook in self.hooks.before_request if isinstance(hook, CostLimit)]
            if limits and pricing is None:
                raise ConfigError(f"limits.max_cost needs prices, and there are none for model {name!r}: "
                                  "set model.pricing in agent.yaml to use it")
            model = build_model(settings)
            self.project.settings = settings
            self.model = self.loop.model = self.compactor.model = model
            self.pricing = self.meter.price = pricing
            for limit in limits:
                limit.pricing = pricing  # type: ignore[assignment]

    def reset(self) -> None:
        """Forget the conversation, keeping the system prompt (chat's /clear)."""
        self.history.replace([dict(self.system_message)], "clear")

    # -- sessions -------------------------------------------------------------------------------------

    def restore(self, messages: list[dict[str, Any]]) -> None:
        """Take up an earlier conversation: ``messages`` (system prompt included) as its last request sent
        them. Not reported as a change: it is where the conversation already was."""
        with self._lock:
            self.history = History([dict(m) for m in messages], emit=self.bus)

    def record_session(self, store: SessionStore | None = None) -> SessionWriter:
        """Save this conversation as a session file (``$XDG_DATA_HOME/nami/sessions``) as it runs. The
        file stays locked until :meth:`close`, so no other process appends to it meanwhile."""
        self._session = record_session(self, store)
        return self._session

    @property
    def session_file(self) -> Path | None:
        """The file this conversation is saved in (it exists once the first message is written)."""
        return self._session.path if self._session is not None else None

    def resume_session(self, ref: str | None = None, *, store: SessionStore | None = None,
                       force: bool = False) -> LoadedSession:
        """Continue session ``ref`` (None: the latest of this workspace) and keep saving to it."""
        self._session, loaded = resume_session(self, ref, store=store, force=force)
        return loaded

    def close(self) -> None:
        """Release the session file (the end of the process does too); later runs are not saved. An agent
        made by :meth:`from_config` also stops the project's MCP servers."""
        session, self._session = self._session, None
        if session is not None:
            self.bus.remove(session)
            self.meter.listeners.remove(session.record_step)
            self.compactor.listeners.remove(session.record_compaction)
            session.close()
        if self._owns_project:
            self.project.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_agent(config: str | Path | None = None, **options: Any) -> Agent:
    """``Agent.from_config`` under a shorter name."""
    return Agent.from_config(config, **options)


def build_model(effective: Effective) -> Model:
    """The OpenAI-compatible client the settings describe (openai is imported on the first request)."""
    from nami_yaml.model.client import OpenAIChatModel

    get = effective.get
    if not get("model.name") or not get("model.base_url"):
        missing = "model.name" if not get("model.name") else "model.base_url"
        raise ConfigError(f"{missing} is not set: give it in agent.yaml, or use --model / --base-url "
                          f"(or $NAMI_MODEL / $NAMI_BASE_URL)")
    options = dict(get("model.options") or {})
    if get("model.max_tokens") is not None:
        options["max_tokens"] = get("model.max_tokens")
    key_source = effective.api_key_source
    return OpenAIChatModel(
        get("model.name"), get("model.base_url"), api_key=effective.api_key,
        # Error hints name the variable the key came from, or the one it should be in.
        api_key_env=key_source[1:] if key_source.startswith("$") else get("model.api_key_env"),
        stream=bool(get("model.stream")), max_retries=int(get("model.retries")), timeout=float(get("model.timeout")),
        temperature=get("model.temperature"), options=options, quirks=get("model.quirks"),
    )
