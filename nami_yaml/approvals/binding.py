"""What an approval binds: a digest over everything that decides what a call does (the tool, its rendered
argv or arguments, stdin, the environment it gets, its working folder, its target, its sandbox, its plan
file where its tool has a plan step), kept per
part so a difference can be named ("the environment changed"), never only "something changed".

Secrets are never kept here in the clear: values are hashed, and only the hashes are written to a queue file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nami_yaml.agent.toolbox import PreparedCall

# The parts, in the order a difference is reported, with the words that report it.
PARTS: dict[str, str] = {
    "tool": "the tool",
    "arguments": "the arguments",
    "argv": "the command line",
    "stdin": "the input (stdin)",
    "env": "the environment",
    "cwd": "the working folder",
    "target": "the target",
    "sandbox": "the sandbox",
    "runs": "what runs (entry point, MCP server or script)",
    "plan": "the plan",
}


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Binding:
    """The SHA-256 of each part of a call, and of them all (``digest``)."""

    parts: Mapping[str, str]

    @property
    def digest(self) -> str:
        return _hash(dict(self.parts))

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "parts": dict(self.parts)}

    def changed(self, now: Binding) -> list[str]:
        """The parts that differ from ``now``, in words (empty: the same call)."""
        names = list(dict.fromkeys([*self.parts, *now.parts]))
        return [PARTS.get(name, name) for name in names if self.parts.get(name) != now.parts.get(name)]


def _environment(call: PreparedCall, plan: Mapping[str, Any]) -> dict[str, Any]:
    """The environment the process gets: each name with the hash of its value. The whole environment where
    the call carries it (a process tool), else what its plan says it sets and removes."""
    invocation = getattr(call, "invocation", None)
    env = getattr(invocation, "env", None)
    if isinstance(env, Mapping):
        return {str(name): hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()
                for name, value in env.items()}
    return {"set": {str(name): hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()
                    for name, value in (plan.get("env_set") or {}).items()},
            "removed": sorted(plan.get("env_removed") or [])}


def _plan_digest(call: PreparedCall) -> str | None:
    digest = getattr(call, "plan_digest", None)
    return digest() if callable(digest) else None


def bind(call: PreparedCall) -> Binding:
    """The binding of ``call`` as it would run now (its plan is computed again)."""
    plan = call.plan()
    runs = {key: plan.get(key) for key in ("script", "entrypoint", "mcp_server", "mcp_tool", "endpoint")
            if plan.get(key) is not None}
    parts = {
        "tool": _hash([call.name, call.kind, call.risk, getattr(call, "risk_reason", None)]),
        "arguments": _hash(call.arguments),
        "argv": _hash(plan.get("argv")),
        "stdin": _hash(plan.get("stdin")),
        "env": _hash(_environment(call, plan)),
        "cwd": _hash(plan.get("cwd")),
        "target": _hash(getattr(call, "target", None)),
        "sandbox": _hash(plan.get("sandbox")),
        "runs": _hash(runs),
        # The plan step's plan file as it is now (else the output shown): a plan changed after the approval
        # is another call (runners/plan_step.py).
        "plan": _hash(_plan_digest(call)),
    }
    return Binding(parts)


def digest_of(call: PreparedCall) -> str:
    """The one digest of ``call`` (a key for "yes for the session": the same call, wherever it runs)."""
    return bind(call).digest
