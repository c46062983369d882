"""Sub-agents: the named agents an agent may hand a task to (its ``agent__NAME`` tools), the run of one such
task (a child agent, recorded beside its caller's session), and the budgets they share: the caller's
requests left (limits.max_steps counts the sub-agents' requests too) and its limits.max_cost left.

The agent delegates here and this module never imports it (app/agent.py imports this one, and an import
back would be a cycle): the child is built with the caller's own class, and a child knows of its parent
only what :class:`Caller` lists."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from nami_yaml.agent.events import SubagentRan
from nami_yaml.agent.hooks import BeforeRequest, BeforeTool, Hooks, StopRun
from nami_yaml.app.assembly import agent_view, build_model
from nami_yaml.app.named_agents import Narrowing, agent_risk, agent_tool
from nami_yaml.app.project import Project
from nami_yaml.policy.permissions import SPAWNS
from nami_yaml.registry.registry import Registry
from nami_yaml.result import ToolResult
from nami_yaml.runners.output import truncate_text
from nami_yaml.runtime import RuntimeContext
from nami_yaml.session.cost import CostLimit
from nami_yaml.session.usage import UsageMeter


class Caller(Protocol):
    """What this module reads of an agent (app/agent.py's Agent, not imported: it imports this module)."""

    session_id: str


@dataclass(frozen=True)
class Lineage:
    """Where an agent stands among the project's named agents: which one it is (None: the project's
    top-level agent), how deep below the agent the person runs, the narrowing guards of it and of every
    agent above it, and the agent that handed it its task."""

    name: str | None = None
    depth: int = 0
    layers: tuple[BeforeTool, ...] = ()
    parent: Caller | None = None
    trace: dict[str, str] | None = None  # traced runs: the context of the parent's call that started it


class Subagents:
    """For one agent (``agent``: an app/agent.py Agent): which named agents it may call, its tools that call
    them, the run of a call, and the step budget its run shares with them."""

    def __init__(self, agent: Any):
        self.agent = agent

    def names(self) -> list[str]:
        """The named agents this one may call: within the depth limit, those agent.yaml's ``subagents``
        lists for the top-level agent (all by default), those its own ``subagents`` lists for a named one."""
        agent = self.agent
        specs, lineage, root = agent.specs, agent.lineage, agent.root
        if not specs or lineage.depth >= root.settings.limits.max_agent_depth:
            return []
        if lineage.name is None:
            project = root.settings.config_file(root.settings.config_path)
            listed = project.data.get("subagents") if project is not None else None
            names = list(specs) if listed is None else list(listed)
        else:
            names = list(specs[lineage.name].subagents)
        return [name for name in names if name in specs]

    def with_tools(self, project: Project) -> Project:
        """The project with an agent__NAME tool for each named agent this one may hand tasks to."""
        names = self.names()
        if not names:
            return project
        specs, root = self.agent.specs, self.agent.root
        tools = [agent_tool(specs[name], agent_risk(specs[name], root.registry, specs), self.spawn)
                 for name in names]
        registry = Registry([*project.registry, *tools], on_demand=project.registry.on_demand)
        return replace(project, registry=registry)

    def before_request(self, project: Project) -> list[BeforeRequest]:
        """The hooks a run needs when its tools start sub-agents: the shared step budget."""
        return [self.step_budget] if any(tool.runner.kind == SPAWNS for tool in project.registry) else []

    def spawn(self, name: str, task: str, ctx: RuntimeContext) -> ToolResult:
        """Run named agent ``name`` on ``task`` (an agent__NAME call): a fresh conversation with its prompt,
        its tools and the intersection of its rights and ours, the same person asked (its name shown),
        its requests counted into ours, stopped with our call. Its answer, capped, is the result."""
        agent = self.agent
        spec = agent.specs[name]
        view = agent_view(agent.root, spec, cancel=ctx.cancel)
        layers = (*agent.lineage.layers, Narrowing(spec, view.registry, view.context.workspace))
        lineage = Lineage(name, agent.lineage.depth + 1, layers, parent=agent, trace=ctx.trace)
        options = replace(agent.options, agent=name, on_event=None, record_session=False, resume=None,
                          session_id=None)
        # A child answers in prose: the parent's JSON mode for a structured answer is not passed down.
        own_model = (spec.model or agent.answers is not None) and agent.options.client is None
        model = build_model(view.settings) if own_model else agent.model
        child = type(agent)(view, model, options, lineage=lineage, specs=agent.specs, root=agent.root)
        try:
            if agent.running:  # the budgets of our run are shared: steps and cost left
                left = agent.loop.max_steps - agent.meter.run.steps
                if left <= 0:
                    return ToolResult.error(f"agent {name} not started: this run has no model requests left "
                                            f"(limits.max_steps {agent.loop.max_steps})")
                child.loop.max_steps = min(child.loop.max_steps, left)
                child.share_cost_limit(agent)
            child.meter.listeners.append(lambda step: agent.meter.record(replace(step)))
            session = child.record_session().id if agent.session_file is not None else None
            outcome = child.run(task)
        finally:
            child.close()
        agent.bus(SubagentRan(name, session, outcome.status))
        answered = outcome.status == "answered" and outcome.final_text is not None
        text = outcome.final_text if answered else (
            f"Error: agent {name} stopped without an answer ({outcome.status}): {outcome.error}")
        limit = ctx.settings.max_output
        details: dict[str, Any] = {"agent": name, "session": session, "status": outcome.status,
                                   "steps": outcome.steps}
        if len(text or "") > limit:
            text, spill = truncate_text(text or "", limit, ctx.spill_dir, ctx.settings.max_saved_output)
            details.update(truncated=True, spill_path=str(spill) if spill else None)
        return ToolResult(text or "", ok=answered, details=details)

    def step_budget(self, info: Any) -> None:
        """The run's step limit counts the requests of the sub-agents it ran too."""
        meter, loop = self.agent.meter, self.agent.loop
        if meter.run.steps >= loop.max_steps:
            raise StopRun(f"Stopped before request {info.step}: {meter.run.steps} model requests, with "
                          f"those of sub-agents, reached limits.max_steps ({loop.max_steps}).", "max_steps")


def share_cost_limit(hooks: Hooks, meter: UsageMeter, parent_hooks: Hooks, parent_meter: UsageMeter) -> None:
    """A sub-agent (its ``hooks`` and ``meter``) may spend no more than what is left of its caller's
    limits.max_cost."""
    theirs = [hook for hook in parent_hooks.before_request if isinstance(hook, CostLimit)]
    ours = [hook for hook in hooks.before_request if isinstance(hook, CostLimit)]
    for limit in theirs:
        left = limit.limit - parent_meter.run.cost
        for own in ours:
            own.limit = min(own.limit, left)
        if not ours:
            hooks.before_request.append(CostLimit(left, limit.pricing, meter))
