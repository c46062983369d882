"""Tracing an agent's runs when telemetry is switched on: a RunTracer (nami_yaml/telemetry/spans.py) added to
the agent's event bus like any other subscriber, and an empty trace carrier in its runtime context so each
call gets one of its own. Off (the default), this imports nothing of OpenTelemetry and adds nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from nami_yaml.config.sections import TelemetrySettings
from nami_yaml.config.trust import needs_trust
from nami_yaml.telemetry.switch import EXTRA_MISSING, NotTraced, Tracing, choose

TOP_LEVEL_NAME = "nami"  # gen_ai.agent.name of the project's own agent (a named agent has its name)
ENV_CARRIER = (("TRACEPARENT", "traceparent"), ("TRACESTATE", "tracestate"))


def trace_runs(agent: Any, link: Mapping[str, str] | None = None) -> str | None:
    """Subscribe a tracer to ``agent`` (an app/agent.py Agent, before its executor is made) when telemetry is
    on; the notice to give when it was asked for and cannot be (the extra missing), else None. ``link``: a
    batch's trace context, which each run's trace links to."""
    project = agent.project
    settings = project.settings
    chosen = choose(trusted_telemetry(project), project.context.host_env)
    if chosen is None:
        return None
    if isinstance(chosen, NotTraced):
        return chosen.why
    try:
        from nami_yaml.telemetry.spans import AgentFacts, RunTracer
    except ImportError:
        return EXTRA_MISSING
    env = project.context.host_env
    lineage = agent.lineage
    # A sub-agent nests under the call that started it; a top-level run under the TRACEPARENT nami was
    # started with, if any (a CI job's trace), else it starts a trace of its own.
    parent = lineage.trace if lineage.parent is not None else {
        key: env[name] for name, key in ENV_CARRIER if env.get(name)}
    facts = AgentFacts(name=lineage.name or TOP_LEVEL_NAME, provider=settings.model.provider,
                       model=lambda: getattr(agent.model, "model", None) or agent.settings.model.name,
                       base_url=settings.model.base_url, conversation=lambda: agent.session_id)
    agent.bus.add(RunTracer(chosen, facts, env, parent=parent or None, link=link, flush=lineage.parent is None))
    project.context = replace(project.context, trace={})
    return None


@contextmanager
def batch_trace(project: Any, name: str, tasks: int) -> Iterator[dict[str, str] | None]:
    """While a batch runs: its span, when runs are traced (yields its trace context, for the tasks' runs to
    link to), else None and nothing imported. A notice (the extra missing) is left to each task's run."""
    chosen = choose(trusted_telemetry(project), project.context.host_env)
    span = None
    if isinstance(chosen, Tracing):
        try:
            from nami_yaml.telemetry.spans import BatchSpan
        except ImportError:
            chosen = None
        else:
            span = BatchSpan(chosen, project.context.host_env, name, tasks)
    interrupted = True
    try:
        yield span.carrier if span is not None else None
        interrupted = False
    finally:
        if span is not None:
            span.end(interrupted)


def trusted_telemetry(project: Any) -> TelemetrySettings:
    """``telemetry:`` as the settings have it, unless a project's agent.yaml that is not trusted set any of it:
    then none of the files' (a cloned repository must not send your runs to its own collector)."""
    settings = project.settings
    mine = str(settings.config_path) if settings.config_path is not None else None
    from_project = mine is not None and any(key.startswith("telemetry.") and origin == mine
                                            for key, origin in settings.sources.items())
    if from_project and needs_trust(settings) and not project.is_trusted():
        return TelemetrySettings.from_mapping(None)
    return settings.telemetry
