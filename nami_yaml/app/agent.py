"""The public Python API: an agent built from an agent.yaml (or plain values), run from a script, a
notebook, a CI job or a web service; and :func:`build_agent`, the one place agents are assembled (the CLI,
batch workers and ``Agent.from_config`` all build theirs here). Nothing here prints or prompts."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nami_yaml.agent.events import SESSION_EVENTS, ErrorEvent, Event, EventBus, FinalEvent
from nami_yaml.agent.history import History
from nami_yaml.agent.loop import AgentLoop, RunOutcome
from nami_yaml.app.economy import token_economy
from nami_yaml.app.guards import Asking, Guards
from nami_yaml.app.model_setup import require_model
from nami_yaml.app.options import AgentOptions, EventSink
from nami_yaml.app.project import Project, open_project
from nami_yaml.app.sessions import SessionFacts, continue_session, new_session
from nami_yaml.config.effective import Effective
from nami_yaml.config.settings import with_model
from nami_yaml.errors import ConfigError
from nami_yaml.model.types import Model
from nami_yaml.runners.spill import session_spill_dir
from nami_yaml.session.cost import CostLimit, Pricing
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.store import SessionStore
from nami_yaml.session.writer import SessionWriter


class Agent:
    """A model, a registry of tools and a conversation. ``run`` returns the outcome; ``stream`` yields the
    events ``nami run --json`` prints. Built by :func:`build_agent` (``Agent.from_config``): the options
    say who answers the policy's questions, whether tools run (``dry_run``), and the audit log's id."""

    def __init__(self, project: Project, model: Model, options: AgentOptions | None = None, *,
                 owns_project: bool = False):
        options = options or AgentOptions()
        self.project = project
        self.model = model
        self.bus = EventBus(options.on_event)
        get = project.settings.get
        asking = Asking(options.approve, options.assume_yes, options.approve_risks)
        self.guard = Guards(project, asking, via=options.via, dry_run=options.dry_run, session_id=options.session_id,
                            on_error=lambda message: self.bus(ErrorEvent(message)), before_tool=options.before_tool)
        economy = token_economy(project.settings, model, self.bus)
        self.meter, self.compactor, self.pricing = economy.meter, economy.compactor, economy.pricing
        self.bus.add(self.meter)
        self.hooks = self.guard.hooks()
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
        self.resumed: LoadedSession | None = None  # the session taken up, with what loading it repaired
        self._lock = threading.Lock()  # one run at a time: the history is one conversation
        self._owns_project = owns_project  # opened for it, so close() closes it (its MCP servers)

    @classmethod
    def from_config(cls, config: str | Path | None = None, **options: Any) -> Agent:
        """Load ``config`` (else $NAMI_CONFIG, else the nearest agent.yaml from ``cwd`` up, else defaults)
        and build the agent; the keywords are :class:`~nami_yaml.app.options.AgentOptions` (``model``,
        ``base_url``, ``max_steps`` and ``stream`` override the files as the CLI flags do; ``tools`` adds
        tool files; ``client`` replaces the OpenAI-compatible client, e.g. with a ScriptedModel)."""
        try:
            chosen = AgentOptions(config=config, **options)
        except TypeError as exc:
            raise TypeError(f"Agent.from_config: {exc}") from None
        return build_agent(chosen)

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
        the iteration early (or Ctrl-C while waiting) cancels the run. ``history_events``: also the
        events meant for session files (messages as sent, usage counted, compactions)."""
        events: queue.Queue[Event | None] = queue.Queue()

        def sink(event: Event) -> None:
            if history_events or event.type not in SESSION_EVENTS:
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

    def session_facts(self) -> SessionFacts:
        get = self.settings.get
        return SessionFacts(self.project.context.workspace, self.settings.config_path, get("model.provider"),
                            get("model.name"), get("model.base_url"), self.loop.toolbox.definitions())

    def record_session(self, store: SessionStore | None = None) -> SessionWriter:
        """Save this conversation as a session file (``$XDG_DATA_HOME/nami/sessions``) as it runs. The
        file stays locked until :meth:`close`, so no other process appends to it meanwhile."""
        store = store or SessionStore()
        self._end_session()
        self._attach(new_session(self.session_facts(), self.messages, store), store)
        assert self._session is not None
        return self._session

    @property
    def session_file(self) -> Path | None:
        """The file this conversation is saved in (it exists once the first message is written)."""
        return self._session.path if self._session is not None else None

    def resume_session(self, ref: str | None = None, *, store: SessionStore | None = None,
                       force: bool = False) -> LoadedSession:
        """Continue session ``ref`` (None: the latest of this workspace) and keep saving to it."""
        store = store or SessionStore()
        self._end_session()
        writer, loaded = continue_session(self.session_facts(), ref, store=store, force=force)
        self.restore(loaded.messages)
        self.meter.session = loaded.totals
        self._attach(writer, store)
        self.resumed = loaded
        return loaded

    def _attach(self, writer: SessionWriter, store: SessionStore) -> None:
        self._session = writer
        self.bus.add(writer)
        self.session_id = writer.id
        # Saved output belongs to the session: a continued session can read the paths its results named.
        self.project.context.spill_dir = session_spill_dir(name=writer.id, keep=store.has)

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            self.bus.remove(session)
            session.close()

    def close(self) -> None:
        """Release the session file (the end of the process does too); later runs are not saved. An agent
        whose project was opened for it (``from_config``) also stops the project's MCP servers."""
        self._end_session()
        if self._owns_project:
            self.project.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_agent(config: str | Path | None = None, **options: Any) -> Agent:
    """``Agent.from_config`` under a shorter name."""
    return Agent.from_config(config, **options)


def open_project_for(options: AgentOptions, *, needs_model: bool = False) -> Project:
    """The project an agent will run in: settings, tools, trust (asked or refused as ``options.trust``
    says), and its MCP servers started unless ``options.start_servers`` is False. ``needs_model``: a model
    client will be built from the settings, so they are checked for one first (app/model_setup.py)."""
    return open_project(options.config, cwd=options.cwd, env=options.env, flags=options.flags(),
                        extra_tools=options.tools, trust=options.trust, will_run=True,
                        tool_servers=options.start_servers, discover=options.discover,
                        needs_model=needs_model)


def build_agent(options: AgentOptions, project: Project | None = None) -> Agent:
    """The one agent builder: open the project (unless given: batch opens it before a task's setup),
    build the model client, wire the guards, the accounting and the loop, and record or continue the
    session the options ask for. A project opened here is closed with the agent."""
    owns = project is None
    project = project if project is not None else open_project_for(options, needs_model=options.client is None)
    try:
        agent = Agent(project, options.client or build_model(project.settings), options, owns_project=owns)
        if options.resume is not None:
            agent.resume_session(options.resume or None, force=options.force)
        elif options.record_session:
            agent.record_session()
    except BaseException:
        if owns:
            project.close()
        raise
    return agent


def build_model(effective: Effective) -> Model:
    """The OpenAI-compatible client the settings describe (openai is imported on the first request)."""
    from nami_yaml.model.client import OpenAIChatModel

    require_model(effective)
    get = effective.get
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
