"""The budgets a sub-agent shares with its caller (app/subagents.py), as values: no model, no project."""

from __future__ import annotations

from nami_yaml.agent.hooks import Hooks
from nami_yaml.app.subagents import share_cost_limit
from nami_yaml.session.cost import CostLimit, Pricing
from nami_yaml.session.usage import UsageMeter

PRICES = Pricing(1.0, 2.0)


def limits(hooks: Hooks) -> list[CostLimit]:
    return [hook for hook in hooks.before_request if isinstance(hook, CostLimit)]


def test_a_sub_agent_gets_what_is_left_of_its_callers_cost_limit() -> None:
    parent_meter = UsageMeter(price=PRICES)
    parent_meter.run.cost = 0.75
    parent = Hooks(before_request=[CostLimit(1.0, PRICES, parent_meter)])
    child_meter = UsageMeter(price=PRICES)
    child = Hooks()
    share_cost_limit(child, child_meter, parent, parent_meter)
    [added] = limits(child)
    assert added.limit == 0.25 and added.pricing is PRICES and added.meter is child_meter


def test_a_sub_agents_own_cost_limit_is_lowered_never_raised() -> None:
    parent_meter = UsageMeter(price=PRICES)
    parent_meter.run.cost = 0.5
    parent = Hooks(before_request=[CostLimit(1.0, PRICES, parent_meter)])
    child_meter = UsageMeter(price=PRICES)
    tight, loose = CostLimit(0.1, PRICES, child_meter), CostLimit(3.0, PRICES, child_meter)
    child = Hooks(before_request=[tight, loose])
    share_cost_limit(child, child_meter, parent, parent_meter)
    assert limits(child) == [tight, loose]  # no limit added beside its own
    assert (tight.limit, loose.limit) == (0.1, 0.5)


def test_a_caller_without_a_cost_limit_leaves_the_sub_agent_as_it_is() -> None:
    child_meter = UsageMeter(price=PRICES)
    child = Hooks(before_request=[CostLimit(2.0, PRICES, child_meter)])
    share_cost_limit(child, child_meter, Hooks(), UsageMeter(price=PRICES))
    assert [limit.limit for limit in limits(child)] == [2.0]
