"""The per-risk defaults of agent.yaml's ``permissions:`` as a before_tool decision."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nami_yaml.agent.hooks import Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.setting_defaults import PERMISSIONS

# Reads run; writes and commands: the permissions.* settings' defaults (nami_yaml.setting_defaults).
DEFAULT_PERMISSIONS: dict[str, str] = {"read": "allow", **PERMISSIONS}
BY_HAND = "tools call (by hand)"
SPAWNS = "agent"  # the kind of a call that hands a task to a sub-agent


class RiskPolicy:
    """``allow`` runs, ``deny`` refuses without asking, ``ask`` leaves it to the approver. A risk the
    configuration does not name falls back to the defaults (reads run, writes and commands ask)."""

    def __init__(self, permissions: Mapping[str, str] | None = None):
        self.permissions = {**DEFAULT_PERMISSIONS, **(permissions or {})}

    def __call__(self, call: PreparedCall) -> Decision:
        if call.kind == SPAWNS:
            # A call that runs a sub-agent: each of its own calls is decided, and asked about, as it comes.
            # Rules can still ask about the call itself or deny it.
            return Decision.allow(None, "sub-agent")
        risk = call.risk if call.risk in self.permissions else "exec"
        setting = self.permissions[risk]
        source = f"permissions.{risk}"
        if setting == "allow":
            return Decision.allow(source=None if risk == "read" else source)
        if setting == "deny":
            return Decision.deny(f"{risk} tools are not allowed here ({source}: deny)", source)
        return Decision.ask(source=source)


class CodeWrites:
    """A write into a path where writing runs code (the executor marks it: ``risk_reason``) is decided as
    an ``exec`` call is, whatever rule allows the tool. As its own before_tool opinion it cannot be
    loosened: of all opinions the strictest wins, so ``allow write_file`` never lets it through."""

    def __init__(self, permissions: Mapping[str, str] | None = None):
        self.exec = RiskPolicy(permissions).permissions["exec"]

    def __call__(self, call: PreparedCall) -> Decision | None:
        reason = getattr(call, "risk_reason", None)
        if not reason:
            return None
        why = f"it {reason}"
        if self.exec == "allow":
            return Decision.allow(why, "permissions.exec")
        if self.exec == "deny":
            return Decision.deny(f"{why}, and exec tools are not allowed here (permissions.exec: deny)",
                                 "permissions.exec")
        return Decision.ask(why, "permissions.exec")



def by_hand(defaults: Callable[[PreparedCall], Decision]) -> Callable[[PreparedCall], Decision]:
    """The fallback for a call a person typed (``nami tools call``): what the per-risk defaults would ask
    about runs, since they asked for it; a default deny stays a deny. Rules, and writes that run code, are
    not fallbacks: they still ask."""

    def decide(call: PreparedCall) -> Decision:
        decision = defaults(call)
        if decision.action != "ask":
            return decision
        return Decision.allow(f"{decision.source} asks about the model's calls; calling it by hand is your yes",
                              BY_HAND)

    return decide
