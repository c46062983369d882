"""What tokens cost, and ``limits.max_cost``: a run stops before the request that would pass it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.hooks import RequestInfo, StopRun
from nami_yaml.session.usage import StepUsage, UsageMeter

PER = 1_000_000  # prices are per million tokens


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens. Reasoning tokens are part of the output and priced as output."""

    input: float
    output: float
    cached_input: float | None = None  # input served from the provider's prompt cache; default: input

    @classmethod
    def from_settings(cls, value: Mapping[str, Any] | None) -> Pricing | None:
        if not value:
            return None
        cached = value.get("cached_input")
        return cls(float(value["input"]), float(value["output"]), None if cached is None else float(cached))

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        cached = min(cached_tokens, prompt_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((prompt_tokens - cached) * self.input + cached * cached_price + completion_tokens * self.output) / PER

    def __call__(self, step: StepUsage) -> float:
        """The UsageMeter's pricer."""
        return self.cost(step.prompt_tokens, step.cached_tokens, step.completion_tokens)


def money(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


@dataclass
class CostLimit:
    """A before_request hook. The next request's cost is estimated from its size (all input at the
    uncached price, as much output as the run's largest step so far): an overestimate, so the limit
    errs on the side of stopping."""

    limit: float
    pricing: Pricing
    meter: UsageMeter

    def __call__(self, info: RequestInfo) -> None:
        spent = self.meter.run.cost
        largest_output = max(self.meter.largest_completion, 0)
        estimate = self.pricing.cost(self.meter.estimate_request(info), 0, largest_output)
        if spent + estimate > self.limit:
            raise StopRun(
                f"Stopped before request {info.step}: it would pass limits.max_cost ({money(self.limit)}): "
                f"{money(spent)} spent in this run, the next request estimated at {money(estimate)}.", status="max_cost")
