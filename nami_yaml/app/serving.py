"""Calls from other agents (``nami mcp serve``): the executor, the policy and the audit log of the loop.

There is nobody to ask: a call the policy would ask about is refused, naming the setting or rule that
asks, unless the server was started with ``--approve`` for its risk (as ``nami run --approve``); a deny is
always a deny. Each line of the audit log says ``via: mcp`` and which client asked. Knows nothing of the
MCP SDK (``nami_yaml.mcp.server`` speaks the protocol).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from nami_yaml.agent.hooks import CallRecord, Decision, strictest
from nami_yaml.app.project import Project
from nami_yaml.app.safety import open_audit, project_policy
from nami_yaml.model.types import ToolCall
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.tool import Tool
from nami_yaml.result import ToolResult
from nami_yaml.session.store import new_session_id

if TYPE_CHECKING:
    from nami_yaml.policy.audit import AuditLog

VIA = "mcp"


class ServedTools:
    """The tools one ``nami mcp serve`` offers, and how each call of a client is decided, run and recorded.
    Raises before serving anything when the project is not trusted, a rule cannot be used or the audit log
    cannot be written."""

    def __init__(self, project: Project, *, approve_risks: Collection[str] = (), include_builtins: bool = False,
                 session_id: str | None = None):
        self.project = project
        self.policy = project_policy(project)
        self.executor = project.executor()
        self.tools: list[Tool] = [t for t in project.registry if include_builtins or not t.builtin]
        self._served = {tool.name for tool in self.tools}
        self.approve_risks = frozenset(approve_risks)
        # Calls that run at once, whatever a client sends: each may be a process (limits.max_parallel_tools).
        self.max_parallel = int(project.settings.get("limits.max_parallel_tools"))
        self.session_id = session_id or new_session_id()
        self._audits: dict[str, AuditLog] = {}
        self._lock = threading.Lock()
        self._running: set[ServedCall] = set()
        self.audit(None)  # fails now, before a client connects, if the log cannot be written

    def audit(self, client: str | None) -> AuditLog:
        """The audit log as this client writes to it (one session for the server, the client in each line)."""
        with self._lock:
            log = self._audits.get(client or "")
            if log is None:
                log = self._audits[client or ""] = open_audit(self.project, via=VIA, session=self.session_id,
                                                              client=client)
            return log

    def start(self, name: str, arguments: dict[str, Any] | None, client: str | None) -> ServedCall:
        """Validate and decide one call; a refused or invalid call already holds its result (and is recorded)."""
        return ServedCall(self, name, arguments or {}, client)

    def decide(self, prepared: PreparedToolCall, audit: AuditLog) -> Decision:
        decision = strictest([self.policy(prepared), audit.before_tool(prepared)])
        assert decision is not None
        if decision.action != "ask":
            return decision
        if prepared.risk in self.approve_risks:
            return Decision.allow(source=f"--approve {prepared.risk}")
        asks = decision.source or "the policy"
        why = f" ({decision.reason})" if decision.reason else ""
        return Decision.deny(f"{asks} asks about this call{why}, and nobody can be asked over MCP. Allow it with a "
                             f"rule in agent.yaml, or start nami mcp serve with --approve {prepared.risk}",
                             decision.source or "no approver")

    def cancel_all(self) -> None:
        """Cancel every call still running (the server is stopping): their process groups are killed."""
        with self._lock:
            running = list(self._running)
        for call in running:
            call.cancel()

    def _track(self, call: ServedCall, running: bool) -> None:
        with self._lock:
            (self._running.add if running else self._running.discard)(call)


class ServedCall:
    """One client call: ``result`` is set at once when it was refused or invalid; else :meth:`run` runs it."""

    def __init__(self, served: ServedTools, name: str, arguments: dict[str, Any], client: str | None):
        self.served = served
        self.call = ToolCall(f"mcp-{secrets.token_hex(4)}", name, json.dumps(arguments, ensure_ascii=False))
        self.audit = served.audit(client)
        self.prepared: PreparedToolCall | None = None
        self.decision: Decision | None = None
        self.result: ToolResult | None = None
        self.refused = True  # until it is validated and allowed
        if name not in served._served:
            self._finish(ToolResult.error(f"unknown tool '{name}'. Available tools: {', '.join(served._served)}"))
            return
        prepared = served.executor.prepare(name, arguments)
        if not isinstance(prepared, PreparedToolCall):
            self._finish(prepared)
            return
        self.prepared = prepared
        self.decision = served.decide(prepared, self.audit)
        if self.decision.action != "allow":
            why = f" Reason: {self.decision.reason}." if self.decision.reason else ""
            self._finish(ToolResult(f"Error: refused by {self.decision.source or 'policy'}: {prepared.describe()}."
                                    f"{why}", ok=False, details={"denied": True}))
            return
        self.refused = False

    def run(self) -> ToolResult:
        """Run the allowed call (in a thread of the caller's choosing) and record it. Never raises."""
        assert self.prepared is not None and not self.refused
        self.served._track(self, True)
        started = time.time()
        try:
            result = self.prepared.run()
        finally:
            self.served._track(self, False)
        self._finish(result, started)
        if self.audit.failure:
            result.content += f"\n[nami: the audit log {self.audit.path} could not be written: {self.audit.failure}]"
            result.ok = False
        return result

    def cancel(self) -> None:
        """Stop it: its process group is killed and its result says it was interrupted."""
        if self.prepared is not None:
            self.prepared.cancel()

    def _finish(self, result: ToolResult, started: float | None = None) -> None:
        self.result = result
        duration = None if started is None else round(time.time() - started, 3)
        self.audit.after_tool(CallRecord(self.call, self.prepared, self.decision, result, started, duration))
