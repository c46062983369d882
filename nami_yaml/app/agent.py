"""The public Python API: an agent built from an agent.yaml (or plain values), run from a script, a
notebook, a CI job or a web service; and :func:`build_agent`, the one place agents are assembled (the CLI,
batch workers and ``Agent.from_config`` all build theirs here). Nothing here prints or prompts."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from nami_yaml.agent.events import (
    NOT_STREAMED,
    TRACE_EVENTS,
    ErrorEvent,
    Event,
    EventBus,
    FinalEvent,
    NoticeEvent,
    ServerLog,
)
from nami_yaml.agent.history import History
from nami_yaml.agent.hooks import StopRun
from nami_yaml.agent.loop import AgentLoop, RunOutcome
from nami_yaml.app.answers import StructuredAnswers, resolve_schema, structured_answers
from nami_yaml.app.assembly import agent_view, build_model
from nami_yaml.app.economy import token_economy
from nami_yaml.app.guards import Asking, Guards
from nami_yaml.app.model_switch import switch_model
from nami_yaml.app.named_agents import Narrowing, agent_problems, unknown_agent
from nami_yaml.app.options import AgentOptions, EventSink
from nami_yaml.app.project import Project, open_project
from nami_yaml.app.sessions import SessionFacts, SessionRecording, session_facts
from nami_yaml.app.subagents import Lineage, Subagents, share_cost_limit
from nami_yaml.app.tracing import trace_runs
from nami_yaml.builtins.skill_tools import loads_with_skills
from nami_yaml.config.agents import AgentSpec, load_agents
from nami_yaml.config.effective import Effective
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.model.types import Model
from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.store import SessionStore
from nami_yaml.session.writer import SessionWriter


class Agent:
    """A model, a registry of tools and a conversation. ``run`` returns the outcome; ``stream`` yields the
    events ``nami run --json`` prints. Built by :func:`build_agent` (``Agent.from_config``): the options
    say who answers the policy's questions, whether tools run (``dry_run``), and the audit log's id.
    ``specs`` are the project's named agents, ``root`` the whole project they choose their tools from.

    The agent wires its collaborators and runs; it delegates sub-agents and their shared budgets to
    app/subagents.py, a model switch to app/model_switch.py and its session file to app/sessions.py."""

    def __init__(self, project: Project, model: Model, options: AgentOptions | None = None, *,
                 owns_project: bool = False, lineage: Lineage | None = None,
                 specs: Mapping[str, AgentSpec] | None = None, root: Project | None = None,
                 answers: StructuredAnswers | None = None):
        options = options or AgentOptions()
        self.options = options
        self.lineage = lineage or Lineage()
        self.specs = dict(specs or {})
        self.root = root or project
        self.model = model
        self.subagents = Subagents(self)  # the named agents it may call, as its agent__NAME tools
        self.project = project = self.subagents.with_tools(project)
        self.bus = EventBus(options.on_event)
        # Its MCP servers' log messages, as events for -v (the first agent built on the project hears them).
        project.servers.listen(lambda server, level, message: self.bus(ServerLog(server, level, message)))
        limits = project.settings.limits
        parent = self.lineage.parent
        asking = Asking(options.approve, options.assume_yes, options.approve_risks,
                        agent=self.lineage.name if parent is not None else None)
        self.guard = Guards(project, asking, via=options.via, dry_run=options.dry_run, session_id=options.session_id,
                            on_error=lambda message: self.bus(ErrorEvent(message)),
                            on_notice=lambda message: self.bus(NoticeEvent(message)),
                            before_tool=[*options.before_tool, *self.lineage.layers], agent=self.lineage.name,
                            parent_session=parent.session_id if parent is not None else None,
                            replay=options.replay.toolbox if options.replay is not None else None)
        economy = token_economy(project.settings, model, self.bus)
        self.meter, self.compactor, self.pricing = economy.meter, economy.compactor, economy.pricing
        self.bus.add(self.meter)
        self.hooks = self.guard.hooks()
        # Tool sources' problems (an MCP server that did not start, or died) are reported before a request.
        self.hooks.before_request = [self._report_notices, *economy.before_request]
        self.hooks.before_request += self.subagents.before_request(project)
        self.hooks.after_run = list(economy.after_run)
        self.answers = answers  # a structured answer's schema, hooks and instructions (app/answers.py)
        if answers is not None:
            self.hooks.after_answer = [answers]
            self.hooks.after_run.append(answers.finish)
        # agent.yaml's hooks: (app/hooks.py): Stop (SubagentStop for a named agent), PreCompact, and in run()
        # SessionStart and UserPromptSubmit. A dry run runs only PreToolUse's (Guards).
        self.run_hooks = None if options.dry_run or options.replay is not None else self.guard.run_hooks
        self._refused: str | None = None  # a UserPromptSubmit hook blocked the prompt: the run stops at once
        self._started = False  # SessionStart ran
        self.hooks.before_request.insert(0, self._refuse_prompt)
        if self.run_hooks is not None:
            run_hooks, subagent = self.run_hooks, parent is not None
            self.hooks.after_answer.append(lambda text: run_hooks.stop(text, subagent=subagent))
            self.compactor.before.append(run_hooks.pre_compact)
        # Traced (telemetry: or the OTEL_* variables): a subscriber on the bus, a trace carrier in the context.
        self._telemetry_notice = trace_runs(self, options.trace_link)
        self.executor = project.executor()
        self.loop = AgentLoop(
            model=model, toolbox=self.guard.toolbox(self.executor), hooks=self.hooks,
            max_steps=limits.max_steps, max_parallel_tools=limits.max_parallel_tools,
            max_tool_calls_per_turn=limits.max_tool_calls_per_turn,
            cancel=project.context.cancel, events=self.guard.events(self.bus),  # type: ignore[arg-type]
        )
        prompt, told = project.system_prompt(), answers.instructions() if answers is not None else None
        self.system_message = {"role": "system", "content": f"{prompt}\n\n{told}" if told else prompt}
        self.history = History([dict(self.system_message)], emit=self.bus)
        self.recording = SessionRecording(self.bus, self.guard, self._save_output_in)
        self.resumed: LoadedSession | None = None  # the session taken up, with what loading it repaired
        self._lock = threading.Lock()  # one run at a time: the history is one conversation
        self._running = False
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

    @property
    def running(self) -> bool:
        """Whether a run is under way (its budgets are then shared with the sub-agents it starts)."""
        return self._running

    # -- running --------------------------------------------------------------------------------------

    def run(self, task: str, *, on_event: EventSink | None = None) -> RunOutcome:
        """Add ``task`` as the user's message and run until the model answers or the run stops. Never
        raises for model or tool failures: the outcome's status and error say what happened."""
        with self._lock:
            if on_event is not None:
                self.bus.add(on_event)
            self._running = True
            try:
                task, self._refused = self._prompt(task)
                if self._refused is None:
                    self.history.append({"role": "user", "content": task})
                return self.loop.run(self.history)
            finally:
                self._running = False
                if on_event is not None:
                    self.bus.remove(on_event)

    def stream(self, task: str, *, history_events: bool = False) -> Iterator[Event]:
        """Run ``task`` and yield its events as they happen, ending with the ``final`` event. Stopping
        the iteration early (or Ctrl-C while waiting) cancels the run. ``history_events``: also the
        events meant for session files (messages as sent, usage counted, compactions)."""
        events: queue.Queue[Event | None] = queue.Queue()

        def sink(event: Event) -> None:
            if event.type in TRACE_EVENTS:  # for tracers only
                return
            if history_events or event.type not in NOT_STREAMED:
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

    def _prompt(self, task: str) -> tuple[str, str | None]:
        """The task as sent, with what SessionStart and UserPromptSubmit hooks add; or why a hook refused it.
        A named agent's task comes from its parent's call, not a person: these hooks are the person's."""
        if self.run_hooks is None or self.lineage.parent is not None:
            return task, None
        context: list[str] = []
        if not self._started:
            self._started = True
            context += self.run_hooks.session_start("resume" if self.resumed is not None else "startup")
        refused, more = self.run_hooks.user_prompt(task)
        if refused is not None:
            return task, f"the prompt was blocked by a UserPromptSubmit hook: {refused}"
        context += more
        return ("\n\n".join([task, "[context from hooks]", *context]) if context else task), None

    def _refuse_prompt(self, info: Any) -> None:
        if self._refused is not None:
            refused, self._refused = self._refused, None
            raise StopRun(refused, "stopped")

    def _report_notices(self, info: Any) -> None:
        if self._telemetry_notice is not None:
            self.bus(NoticeEvent(self._telemetry_notice))
            self._telemetry_notice = None
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
            self.model, self.pricing = switch_model(name, self.project, self.answers, loop=self.loop,
                                                    compactor=self.compactor, meter=self.meter, hooks=self.hooks)

    def reset(self) -> None:
        """Forget the conversation, keeping the system prompt (chat's /clear)."""
        self.history.replace([dict(self.system_message)], "clear")

    # -- sessions -------------------------------------------------------------------------------------

    def restore(self, messages: list[dict[str, Any]]) -> None:
        """Take up an earlier conversation: ``messages`` (system prompt included) as its last request sent
        them. Not reported as a change: it is where the conversation already was."""
        with self._lock:
            self.history = History([dict(m) for m in messages], emit=self.bus)
            context = self.project.context
            context.loaded_groups.add(loads_with_skills(messages, context.tool_groups, context.skills,
                                                        context.tool_names))

    def _save_output_in(self, folder: Path) -> None:
        """Tools' saved output goes to ``folder`` from now on (a session's own): a new context, as the
        context is frozen, for the project and the executor the loop calls."""
        self.project.context = self.executor.ctx = replace(self.project.context, spill_dir=folder)

    def session_facts(self) -> SessionFacts:
        return session_facts(self.settings, self.project.context.workspace, self.loop.toolbox.definitions())

    def record_session(self, store: SessionStore | None = None) -> SessionWriter:
        """Save this conversation as a session file (``$XDG_DATA_HOME/nami/sessions``) as it runs. The
        file stays locked until :meth:`close`, so no other process appends to it meanwhile."""
        parent = self.lineage.parent
        extra = {"agent": self.lineage.name} if self.lineage.name else {}
        if parent is not None:
            extra["parent"] = parent.session_id
        return self.recording.record(self.session_facts(), self.messages, store, extra=extra)

    @property
    def session_file(self) -> Path | None:
        """The file this conversation is saved in (it exists once the first message is written)."""
        return self.recording.path

    def resume_session(self, ref: str | None = None, *, store: SessionStore | None = None,
                       force: bool = False) -> LoadedSession:
        """Continue session ``ref`` (None: the latest of this workspace) and keep saving to it."""
        loaded = self.recording.resume(self.session_facts(), ref, store=store, force=force)
        self.restore(loaded.messages)
        self.meter.session = loaded.totals
        self.resumed = loaded
        return loaded

    # -- sub-agents (app/subagents.py) ----------------------------------------------------------------

    def share_cost_limit(self, parent: Agent) -> None:
        """A sub-agent may spend no more than what is left of its caller's limits.max_cost."""
        share_cost_limit(self.hooks, self.meter, parent.hooks, parent.meter)

    def close(self) -> None:
        """Release the session file (the end of the process does too); later runs are not saved. An agent
        whose project was opened for it (``from_config``) also stops the project's MCP servers."""
        self.recording.end()
        if self._owns_project:
            self.project.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_agent(config: str | Path | None = None, **options: Any) -> Agent:
    """``Agent.from_config`` under a shorter name."""
    return Agent.from_config(config, **options)


def build_agent(options: AgentOptions, project: Project | None = None) -> Agent:
    """The one agent builder: open the project (unless given: batch opens it before a task's setup),
    build the model client, wire the guards, the accounting and the loop, and record or continue the
    session the options ask for. ``options.agent`` runs one of the project's named agents. A project
    opened here is closed with the agent."""
    owns = project is None
    if project is None:
        project = open_project(options.request(), trust=options.trust, will_run=True,
                               tool_servers=options.start_servers, needs_model=options.client is None)
    try:
        specs = load_agents(project.settings)
        errors = [p for p in agent_problems(project.settings, specs, project.registry) if p.is_error]
        if errors:
            raise SpecError(errors)
        view, lineage = project, Lineage()
        if options.agent is not None:
            spec = specs.get(options.agent)
            if spec is None:
                raise ConfigError(unknown_agent(options.agent, specs))
            view = agent_view(project, spec, cancel=project.context.cancel)
            lineage = Lineage(spec.name, 0, (Narrowing(spec, view.registry, view.context.workspace),))
        schema = resolve_schema(options.answer_schema, view.settings, base=options.cwd)
        answers = structured_answers(schema, view.settings)
        model = options.client or build_model(view.settings, answers)
        agent = Agent(view, model, options, owns_project=owns, lineage=lineage, specs=specs, root=project,
                      answers=answers)
        if options.resume is not None:
            agent.resume_session(options.resume or None, force=options.force)
        elif options.record_session:
            agent.record_session()
    except BaseException:
        if owns:
            project.close()
        raise
    return agent
