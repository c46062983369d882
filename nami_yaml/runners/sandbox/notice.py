"""What a run says about the sandbox: the one notice of a run where it is not available
(:func:`run_notice`), and whether a call the sandbox stopped may be offered again without it
(:func:`escalation`). Front ends print and ask; this decides the words and the conditions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.runners.sandbox.plan import KIND_NAMI, OFF, READ_ONLY, SandboxPlan
from nami_yaml.runners.sandbox.probe import Availability, availability
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxSettings


def run_notice(ctx: RuntimeContext) -> str | None:
    """The notice a run shows once, before its first tool call, when its processes cannot be sandboxed
    (None: they are, or the settings turned the sandbox off)."""
    return notice_for(ctx.sandbox, availability(ctx.host_env))


def notice_for(settings: SandboxSettings, found: Availability) -> str | None:
    if settings.mode == OFF or found.available:
        return None
    if settings.mode in ("required", READ_ONLY):
        return (f"nami: tools that start processes will not run: the sandbox is required (sandbox.mode: "
                f"{settings.mode}) and not available here: {found.reason}. To get it, {found.how}.")
    return (f"nami: tools run without a sandbox here: {found.reason}. To get it, {found.how}. "
            "(sandbox.mode: required refuses to run them unsandboxed; sandbox.mode: off silences this.)")


@dataclass(frozen=True)
class Escalation:
    """The offer to rerun one call unsandboxed: ``question`` for the person, ``reason`` for the record."""

    question: str
    reason: str


def escalation(plan: SandboxPlan | None, details: Mapping[str, Any], *, person_present: bool,
               denied: bool = False) -> Escalation | None:
    """Whether to offer rerunning a finished call without the sandbox: only where a person is there to
    approve it (as an exec call), never for a denied call, only when the sandbox was what stopped it
    (``details["sandbox_failure"]``, see failure.py), and only with ``sandbox.escalate: ask``."""
    failure = details.get("sandbox_failure")
    if plan is None or not plan.active or plan.kind == KIND_NAMI or not isinstance(failure, Mapping):
        return None
    if not person_present or denied or plan.escalate != "ask":
        return None
    what = {"network": "needed the network", "write": f"wrote {failure.get('path') or 'outside what it may write'}",
            "hidden": f"read {failure.get('path') or 'a hidden path'}",
            "processes": "saw only its own processes, not the host's",
            "config": f"could not read its configuration ({failure.get('path') or 'a hidden path'})"}.get(str(failure.get("kind")), "was stopped")
    return Escalation(
        question=(f"The sandbox stopped this call: it {what}. Run it once more WITHOUT the sandbox (as an exec "
                  f"call: it may then read, write and reach whatever you can)? To allow it for good, declare "
                  f"{failure.get('key')} in {failure.get('where')}."),
        reason=f"rerun without the sandbox, approved by the user after it {what}")
