"""Switching a running agent to another model (chat's /model): the same endpoint and key under another
name, priced for that name, and every piece that talks to or prices the model re-pointed at once."""

from __future__ import annotations

from nami_yaml.agent.hooks import Hooks
from nami_yaml.agent.loop import AgentLoop
from nami_yaml.app.answers import StructuredAnswers
from nami_yaml.app.assembly import build_model
from nami_yaml.app.project import Project
from nami_yaml.config.settings import with_model
from nami_yaml.errors import ConfigError
from nami_yaml.model.types import Model
from nami_yaml.session.compaction import Compactor
from nami_yaml.session.cost import CostLimit, Pricing
from nami_yaml.session.usage import UsageMeter


def switch_model(name: str, project: Project, answers: StructuredAnswers | None, *, loop: AgentLoop,
                 compactor: Compactor, meter: UsageMeter, hooks: Hooks) -> tuple[Model, Pricing | None]:
    """Point ``project``'s settings, the loop, the compactor, the meter and the cost limits among ``hooks``
    at model ``name`` (agent.yaml's model.pricing, else the provider's list price); the new model and its
    prices. ConfigError, with nothing changed, when limits.max_cost is set and that name has no prices."""
    settings = with_model(project.settings, name)
    pricing = Pricing.from_settings(settings.model.pricing)
    limits = [hook for hook in hooks.before_request if isinstance(hook, CostLimit)]
    if limits and pricing is None:
        raise ConfigError(f"limits.max_cost needs prices, and there are none for model {name!r}: "
                          "set model.pricing in agent.yaml to use it")
    model = build_model(settings, answers)
    project.settings = settings
    loop.model = compactor.model = model
    meter.price = pricing
    for limit in limits:
        limit.pricing = pricing  # type: ignore[assignment]
    return model, pricing
