"""The parts an agent is assembled from, which need no Agent: the project it runs in (opened as the options
say, or seen as a named agent sees it) and the OpenAI-compatible client its settings describe."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from nami_yaml.app.model_setup import require_model
from nami_yaml.app.named_agents import agent_registry, agent_settings
from nami_yaml.app.project import Project, tool_settings
from nami_yaml.cancel import CancelToken
from nami_yaml.config.agents import AgentSpec
from nami_yaml.config.effective import Effective
from nami_yaml.model.types import Model
from nami_yaml.runtime import LoadedGroups

if TYPE_CHECKING:
    from nami_yaml.app.answers import StructuredAnswers


def agent_view(project: Project, spec: AgentSpec, *, cancel: CancelToken) -> Project:
    """The project as named agent ``spec`` sees it: its settings, its tools, a context of its own (its
    cancel switch, its loaded tool groups); the same workspace, trust and MCP servers."""
    registry = agent_registry(spec, project.registry)
    settings = agent_settings(project.settings, spec)
    context = replace(project.context, cancel=cancel, settings=tool_settings(settings),
                      tool_groups=registry.groups(), loaded_groups=LoadedGroups(),
                      tool_names=frozenset(registry.names()))
    return Project(settings, registry, context, project.trusted, cwd=project.cwd, servers=project.servers)


def build_model(effective: Effective, answers: StructuredAnswers | None = None) -> Model:
    """The OpenAI-compatible client the settings describe (openai is imported on the first request), with
    the provider's JSON mode for a structured answer where its preset takes one (unless model.options
    sets a response_format of its own)."""
    from nami_yaml.model.client import OpenAIChatModel

    require_model(effective)
    model = effective.model
    options = dict(model.options)
    if model.max_tokens is not None:
        options["max_tokens"] = model.max_tokens
    for key, value in (answers.request_options() if answers is not None else {}).items():
        options.setdefault(key, value)
    key_source = effective.api_key_source
    return OpenAIChatModel(
        model.name, model.base_url, api_key=effective.api_key,
        # Error hints name the variable the key came from, or the one it should be in.
        api_key_env=key_source[1:] if key_source.startswith("$") else model.api_key_env,
        stream=model.stream, max_retries=model.retries, timeout=model.timeout,
        temperature=model.temperature, options=options, quirks=model.quirks,
        max_response_bytes=effective.limits.max_response_bytes,
    )
