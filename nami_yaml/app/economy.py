"""The token economy of an agent, from its settings: a usage meter (with prices), compaction within the
context window, and limits.max_cost, as the hooks the loop calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nami_yaml.agent.events import Compacted, Event, UsageCounted
from nami_yaml.agent.hooks import AfterRun, BeforeRequest
from nami_yaml.config.effective import Effective
from nami_yaml.errors import ConfigError
from nami_yaml.model.types import Model
from nami_yaml.session.compaction import CompactionRecord, CompactionSettings, Compactor
from nami_yaml.session.cost import CostLimit, Pricing
from nami_yaml.session.usage import UsageMeter


@dataclass
class TokenEconomy:
    meter: UsageMeter  # also an event sink: add it to the agent's bus
    compactor: Compactor
    pricing: Pricing | None
    before_request: list[BeforeRequest]
    after_run: list[AfterRun]


def token_economy(settings: Effective, model: Model, emit: Callable[[Event], None]) -> TokenEconomy:
    """``emit``: the agent's event bus, where each counted request and each compaction is published (a
    session file subscribes to it)."""
    pricing = Pricing.from_settings(settings.model.pricing)
    meter = UsageMeter(price=pricing)
    meter.listeners.append(lambda step: emit(UsageCounted(step.to_record())))
    compaction = settings.compaction
    compactor = Compactor(model, meter, settings.model.context_window,
                          CompactionSettings(compaction.enabled, compaction.threshold, compaction.reserve,
                                             compaction.keep_recent))

    def compacted(record: CompactionRecord) -> None:
        if record.usage is not None:  # a summary request is a request too: counted, priced, saved
            meter.record(record.usage)
        emit(Compacted(record.to_record()))

    compactor.listeners.append(compacted)
    limit = settings.limits.max_cost
    limits: list[BeforeRequest] = []
    if limit is not None:
        if pricing is None:
            raise ConfigError(f"{settings.where('limits', 'max_cost')}: limits.max_cost needs prices, and there "
                              f"are none for model {settings.model.name!r}: set model.pricing (input and output, "
                              "USD per million tokens)")
        limits.append(CostLimit(limit, pricing, meter))
    # Compaction first: the estimate and the cost limit then see the request as it will be sent.
    return TokenEconomy(meter, compactor, pricing, [compactor, meter.before_request, *limits], [meter.after_run])
