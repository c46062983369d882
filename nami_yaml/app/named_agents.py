"""Named agents and sub-agents, from their specs (config/agents.py) to what an agent is built with: its
settings (prompt, model, limits), its view of the project's tools, the guard layer that narrows the
project's rights, and the ``agent__NAME`` tools that hand a task to another named agent.

An agent never has more rights than the project: its permissions and rules are an extra guard whose
opinion only counts when it is stricter (it never says allow), its tools are a subset of the project's,
and a sub-agent's guards hold its caller's layers too, so its rights are the intersection of both.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import Decision, strictest
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.config.agents import AgentSpec
from nami_yaml.config.effective import Effective
from nami_yaml.config.settings import with_values
from nami_yaml.display import summarize_arguments
from nami_yaml.errors import WARNING, Problem
from nami_yaml.policy.permissions import SPAWNS
from nami_yaml.policy.rules import RuleSet, load_rules
from nami_yaml.registry.groups import LOADER
from nami_yaml.registry.registry import DOCS_READER, Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext
from nami_yaml.spec.validate import did_you_mean

AGENT_TOOL_PREFIX = "agent__"
SKILL_READER = "skill"
READERS = (DOCS_READER, SKILL_READER, LOADER)
TASK_HINT = (" Runs as a sub-agent in a fresh conversation: give it the whole task and what it needs to know; "
             "its final answer is the result.")

# Runs named agent NAME on TASK within the call's context; returns its answer as a result. Given by the
# builder (app/agent.py), which knows how to build an agent: this module does not.
Spawn = Callable[[str, str, RuntimeContext], ToolResult]


def agent_settings(effective: Effective, spec: AgentSpec) -> Effective:
    """The project's settings as the named agent runs with them: its prompt and model; its limits, which
    can only be lower than the project's."""
    changes: dict[str, Any] = {}
    if spec.system is not None:
        changes["system"] = spec.system
    for key in ("name", "temperature", "max_tokens"):
        if key in spec.model:
            changes[f"model.{key}"] = spec.model[key]
    for key, value in spec.limits.items():
        ours = effective.get(f"limits.{key}")
        changes[f"limits.{key}"] = value if ours is None else min(value, ours)
    return with_values(effective, changes, f"agent {spec.name} ({spec.where})") if changes else effective


def chosen_tools(spec: AgentSpec, registry: Registry) -> list[Tool]:
    """The project's tools the agent gets: those its ``tools:`` names (names or globs), or every one; the
    readers (tool_docs, skill, load_tools) come with them as they come with the project's."""
    if spec.tools is None:
        return [tool for tool in registry if not tool.name.startswith(AGENT_TOOL_PREFIX)]
    chosen = [tool for tool in registry if tool.name not in READERS
              and any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in spec.tools)]
    needs = {DOCS_READER: any(t.docs is not None for t in chosen), SKILL_READER: True,
             LOADER: any(registry.is_on_demand(t) for t in chosen)}
    return [tool for tool in registry if tool in chosen or (tool.name in READERS and needs[tool.name])]


def agent_registry(spec: AgentSpec, registry: Registry) -> Registry:
    tools = chosen_tools(spec, registry)
    groups = frozenset(t.group for t in tools if t.group is not None and registry.is_on_demand(t))
    return Registry(tools, on_demand=groups)


class Narrowing:
    """A named agent's own permissions and rules as a before_tool opinion that never allows: it asks or
    denies where they do, and says nothing otherwise (the project's policy decides)."""

    def __init__(self, spec: AgentSpec, registry: Registry, workspace: Path):
        self.name = spec.name
        self.permissions = spec.permissions
        self.workspace = workspace
        self.rules: RuleSet | None = None
        if spec.rules:
            self.rules, _ = load_rules(spec.config, registry, check_tools=False)

    def __call__(self, call: PreparedCall) -> Decision | None:
        opinions: list[Decision | None] = []
        # Starting a sub-agent is not what its permissions are about: it inherits them, so each of its
        # calls meets them (its rules may still ask about the call or deny it).
        setting = None if call.kind == SPAWNS else self.permissions.get(call.risk)
        if setting in ("ask", "deny"):
            reason = f"{call.risk} tools are not allowed to agent {self.name}" if setting == "deny" else None
            opinions.append(Decision(setting, reason, f"agent {self.name}: permissions.{call.risk}"))
        if self.rules is not None:
            decided = self.rules.decide(call, self.workspace)
            if decided is not None and decided.action != "allow":
                opinions.append(decided)
        return strictest(opinions)


# -- agents as tools -------------------------------------------------------------------------------------

def agent_tool(spec: AgentSpec, risk: str, spawn: Spawn) -> Tool:
    parameters = {"type": "object", "properties": {"task": {"type": "string", "minLength": 1}},
                  "required": ["task"], "additionalProperties": False}
    return Tool(name=f"{AGENT_TOOL_PREFIX}{spec.name}", description=spec.description.rstrip() + TASK_HINT,
                parameters=parameters, risk=risk, runner=AgentRunner(spec.name, spawn), source=spec.where)


def agent_risk(spec: AgentSpec, registry: Registry, specs: dict[str, AgentSpec], seen: frozenset[str] = frozenset()
               ) -> str:
    """The highest risk among what the agent can do (its tools and its own sub-agents): ``read`` lets it run
    beside other reads."""
    order = {"read": 0, "write": 1, "exec": 2}
    risks = [tool.risk for tool in chosen_tools(spec, registry)]
    risks += [agent_risk(specs[name], registry, specs, seen | {spec.name}) for name in spec.subagents
              if name in specs and name not in seen and name != spec.name]
    return max(risks or ["read"], key=lambda risk: order.get(risk, 2))


@dataclass(frozen=True)
class AgentRunner:
    agent: str
    spawn: Spawn
    kind = SPAWNS

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> AgentInvocation:
        return AgentInvocation(tool, self, args, ctx)


@dataclass
class AgentInvocation:
    tool: str
    runner: AgentRunner
    args: dict[str, Any]
    ctx: RuntimeContext
    kind = SPAWNS

    def describe(self) -> str:
        return f"{self.tool} {summarize_arguments(self.args, limit=120)}".rstrip()

    def plan(self) -> dict[str, Any]:
        return {"agent": self.runner.agent, "task": self.args.get("task", "")}

    def run(self) -> ToolResult:
        try:
            return self.runner.spawn(self.runner.agent, str(self.args.get("task", "")), self.ctx)
        except Exception as exc:  # a sub-agent that cannot be built is a result for the model
            return ToolResult.error(f"agent {self.runner.agent} could not run: {type(exc).__name__}: {exc}")


# -- nami check --------------------------------------------------------------------------------------------

RIGHTS_ORDER = {"allow": 0, "ask": 1, "deny": 2}


def project_right(effective: Effective, risk: str) -> str:
    return effective.permissions.as_mapping().get(risk) or "ask"


def agent_rights(spec: AgentSpec, effective: Effective) -> dict[str, str]:
    """What each of an agent's ``permissions:`` comes to: the stricter of its own and the project's (an
    agent only narrows the project's rights; `nami check` warns of one that tries to widen them)."""
    return {risk: max(setting, project_right(effective, risk), key=lambda value: RIGHTS_ORDER.get(value, 1))
            for risk, setting in spec.permissions.items()}


def agent_problems(effective: Effective, specs: dict[str, AgentSpec], registry: Registry) -> list[Problem]:
    """What `nami check` reports: tool names matching no tool, sub-agents that do not exist, rules that
    cannot be used, and allow rules (an agent can only narrow the project's rights)."""
    problems: list[Problem] = []
    names = [t.name for t in registry if not t.name.startswith(AGENT_TOOL_PREFIX)]
    servers = tuple(f"{server}__" for server in effective.get("mcp_servers") or {})  # known once they run
    for spec in specs.values():
        doc = spec.config.doc
        for index, pattern in enumerate(spec.tools or ()):
            if not pattern.startswith(servers) and not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                problems.append(doc.problem(("tools", index), f"agent {spec.name}: no tool is named {pattern!r}"
                                            f"{did_you_mean(pattern, names)}"))
        for index, name in enumerate(spec.subagents):
            if name not in specs:
                problems.append(doc.problem(("subagents", index), f"no agent is named {name!r}"
                                            f"{did_you_mean(name, list(specs))}"))
        for risk, setting in spec.permissions.items():
            ours = project_right(effective, risk)
            if agent_rights(spec, effective)[risk] != setting:
                problems.append(doc.problem(("permissions", risk), f"agent {spec.name}: {risk}: {setting} is wider "
                                            f"than the project's {risk}: {ours}, which holds (an agent can only "
                                            "narrow the project's rights)", severity=WARNING))
        if spec.rules:
            _, found = load_rules(spec.config, registry, check_tools=True,
                                  servers=list(effective.get("mcp_servers") or {}))
            problems += found
            for index, rule in enumerate(spec.rules):
                if rule.get("decision") == "allow":
                    problems.append(doc.problem(("rules", index, "decision"), "an agent's allow rule allows nothing "
                                                "the project does not: its rules can only ask or deny",
                                                severity=WARNING))
    project = effective.config_file(effective.config_path)
    if project is not None:
        for index, name in enumerate(project.data.get("subagents") or ()):
            if name not in specs:
                problems.append(project.doc.problem(("subagents", index), f"no agent is named {name!r}"
                                                    f"{did_you_mean(name, list(specs))}"))
    return problems


def unknown_agent(name: str, specs: dict[str, AgentSpec]) -> str:
    known = ", ".join(specs) or "none (agent.yaml declares no agents:)"
    return f"no agent is named {name!r}{did_you_mean(name, list(specs))}; agents: {known}"
