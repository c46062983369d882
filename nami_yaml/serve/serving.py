"""Calls from other agents (``nami mcp serve``): the executor and the guards of the loop (the same policy,
the same audit log).

A call the policy would ask about is asked of the client's user where the client can ask them (MCP
elicitation: the question as the terminal words it, the answer bound to the call as shown); with a client
that cannot, it is refused, naming the setting or rule that asks, unless the server was started with
``--approve`` for its risk (as ``nami run --approve``); a deny is always a deny. Each line of the audit log says ``via: mcp`` and which client asked. Knows nothing of the
MCP SDK (``nami_yaml.serve.server`` speaks the protocol).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Collection
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.app.agent import build_agent
from nami_yaml.app.guards import Asking, Guards
from nami_yaml.app.options import AgentOptions
from nami_yaml.app.project import Project, open_project
from nami_yaml.approvals.binding import bind
from nami_yaml.approvals.plans import cut, shown_plan
from nami_yaml.display import visible, visible_line
from nami_yaml.model.types import ToolCall
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.policy.audit import host_secrets, scrub_text, secret_values
from nami_yaml.registry.executor import PreparedToolCall
from nami_yaml.registry.groups import LOADER
from nami_yaml.registry.tool import Tool
from nami_yaml.result import ToolResult
from nami_yaml.session.store import new_session_id

VIA = "mcp"


def nobody_over_mcp(call: PreparedCall, pending: Decision) -> Decision:
    asks = pending.source or "the policy"
    why = f" ({pending.reason})" if pending.reason else ""
    return Decision.deny(f"{asks} asks about this call{why}, and nobody can be asked over MCP. Allow it with a "
                         f"rule in agent.yaml, or start nami mcp serve with --approve {call.risk}",
                         pending.source or "no approver")


ClientAsker = Callable[[ApprovalRequest], "Decision | bool"]
# The client of the call being decided, when it can ask its user (MCP elicitation): set by the protocol
# side around one call's decision (server.py), None for clients that cannot.
CLIENT_ASKS: ContextVar[ClientAsker | None] = ContextVar("nami_client_asks", default=None)


def ask_client(request: ApprovalRequest) -> Decision | bool:
    """The approver of ``nami mcp serve``: the client's user, where the client can ask them (elicitation),
    with the approval bound to the call as it was shown; else today's refusal naming the rule."""
    asks = CLIENT_ASKS.get()
    if asks is None:
        return nobody_over_mcp(request.call, request.pending)
    shown = bind(request.call)
    answer = asks(request)
    changed = shown.changed(bind(request.call))
    if changed and (answer is True or (isinstance(answer, Decision) and answer.action == "allow")):
        return Decision.deny(f"the call changed while the client's user was asked ({', '.join(changed)})",
                             "MCP elicitation")
    return answer


ask_client.can_ask = lambda: CLIENT_ASKS.get() is not None  # type: ignore[attr-defined]
"""Whether the client of the call being decided can ask its user: where it cannot, a plan step is not run
(app/guards.py plan_first) for a question nobody will see."""


def question_text(request: ApprovalRequest) -> str:
    """The question as a client shows it: what would run, where, and which rule asks (redacted)."""
    call, pending = request.call, request.pending
    secrets = sorted({*secret_values(call.arguments), *host_secrets()}, key=len, reverse=True)
    target = getattr(call, "target", None)
    lines = [f"{call.risk} tool {call.name} wants to run" + (f" on target {target}" if target is not None else "")
             + ":", "  " + visible_line(scrub_text(call.describe(), secrets))]
    plan = call.plan()
    if plan.get("cwd"):
        lines.append(f"  in {visible_line(str(plan['cwd']))}")
    asked = f"asked by {pending.source}" if pending.source else "asked"
    lines.append(f"  ({asked}" + (f": {scrub_text(pending.reason, secrets)}" if pending.reason else "") + ")")
    planned = shown_plan(call)
    if planned is not None:  # what the yes approves, and binds (its sha256)
        lines.append(f"Its plan ({visible_line(scrub_text(planned.command, secrets))}):")
        text = visible(scrub_text(cut(planned.text, saved=planned.saved), secrets).rstrip("\n"))
        # each line marked as the plan's, as on the terminal: a line of it cannot pass for one of the question
        lines.extend(f"  | {line}" for line in (text.split("\n") if text else ["(no output)"]))
        lines.append(f"(the yes binds this plan: sha256 {planned.sha256})")
    lines.append("Run it?")
    return "\n".join(lines)


def serve_tools(options: AgentOptions, *, include_builtins: bool = False, agents: bool = False) -> ServedTools:
    """The project the options describe (trusted, or refused: nobody is asked), served; its MCP servers are
    not started (their tools are not served). ``agents``: its named agents too, as agent__NAME tools that
    run the agent on the model agent.yaml names (their calls decided alike: nobody can be asked)."""
    if agents:
        agent = build_agent(replace(options, approve=None, assume_yes=False))
        try:
            return ServedTools(agent.project, approve_risks=options.approve_risks, include_builtins=include_builtins,
                               session_id=options.session_id)
        except BaseException:
            agent.close()
            raise
    project = open_project(options.request(), trust=options.trust, will_run=True, tool_servers=options.start_servers)
    try:
        return ServedTools(project, approve_risks=options.approve_risks, include_builtins=include_builtins,
                           session_id=options.session_id)
    except BaseException:
        project.close()
        raise


class ServedTools:
    """The tools one ``nami mcp serve`` offers, and how each call of a client is decided, run and recorded.
    Raises before serving anything when the project is not trusted, a rule cannot be used or the audit log
    cannot be written."""

    def __init__(self, project: Project, *, approve_risks: Collection[str] = (), include_builtins: bool = False,
                 session_id: str | None = None):
        self.project = project
        self.executor = project.executor()
        # Every tool, those the model would get on demand too (a client chooses for itself); not load_tools.
        self.tools: list[Tool] = [t for t in project.registry if (include_builtins or not t.builtin)
                                  and not (t.builtin and t.name == LOADER)]
        self._served = {tool.name for tool in self.tools}
        self.approve_risks = frozenset(approve_risks)
        # Calls that run at once, whatever a client sends: each may be a process (limits.max_parallel_tools).
        self.max_parallel = project.settings.limits.max_parallel_tools
        self.session_id = session_id or new_session_id()
        # The client's user is asked where the client can (elicitation); else nobody, and asks are refused.
        self._asking = Asking(ask_client, approve_risks=self.approve_risks, nobody=nobody_over_mcp)
        self._guards: dict[str, Guards] = {}
        self._lock = threading.Lock()
        self._running: set[ServedCall] = set()
        self.guards(None)  # fails now, before a client connects, if the project or the log cannot be used

    def guards(self, client: str | None) -> Guards:
        """The guards of this client's calls: one policy and session for the server, the client named in
        each audit line."""
        with self._lock:
            guards = self._guards.get(client or "")
            if guards is None:
                guards = self._guards[client or ""] = Guards(self.project, self._asking, via=VIA,
                                                             session_id=self.session_id, client=client)
            return guards

    def structured(self, name: str, result: ToolResult) -> tuple[ToolResult, dict[str, Any] | None]:
        """The result of a call of ``name`` with its structured content, if the tool declares one."""
        tool = next((t for t in self.tools if t.name == name), None)
        return structured_result(tool, result) if tool is not None else (result, None)

    def start(self, name: str, arguments: dict[str, Any] | None, client: str | None,
              asks: ClientAsker | None = None) -> ServedCall:
        """Validate and decide one call; a refused or invalid call already holds its result (and is recorded).
        ``asks``: how to ask the client's user (None: the client cannot be asked)."""
        token = CLIENT_ASKS.set(asks)
        try:
            return ServedCall(self, name, arguments or {}, client)
        finally:
            CLIENT_ASKS.reset(token)

    def cancel_all(self) -> None:
        """Cancel every call still running (the server is stopping): their process groups are killed."""
        with self._lock:
            running = list(self._running)
        for call in running:
            call.cancel()

    def _track(self, call: ServedCall, running: bool) -> None:
        with self._lock:
            (self._running.add if running else self._running.discard)(call)


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The tool's ``output.schema`` as MCP's ``outputSchema``, which describes an object: a schema of any
    other value is wrapped as ``{"result": ...}`` (as the MCP SDK's own servers wrap a function's result)."""
    schema = _declared(tool)
    if schema is None:
        return None
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def structured_result(tool: Tool, result: ToolResult) -> tuple[ToolResult, dict[str, Any] | None]:
    """The result and its ``structuredContent``: the shaped value, for a tool that declares output.schema
    (wrapped like the schema). A successful call whose output could not be read as that value is an error:
    a client is promised a value of that shape (the SDK's client refuses a result without one)."""
    schema = output_schema(tool)
    if schema is None or not result.ok:
        return result, None
    shaped = result.details.get("output") or {}
    errors = shaped.get("schema_errors") or []
    if not shaped.get("parsed") or errors:
        why = "; ".join(errors) if errors else "it could not be read as output.format says"
        note = f"\n[the output does not match the tool's output.schema: {why}]"
        return ToolResult(result.content + note, ok=False, details=result.details, streams=result.streams), None
    wrapped = schema is not _declared(tool)  # output_schema made a wrapper around it
    return result, {"result": result.value} if wrapped else result.value


def _declared(tool: Tool) -> dict[str, Any] | None:
    return tool.output.schema if tool.output is not None else None


class ServedCall:
    """One client call: ``result`` is set at once when it was refused or invalid; else :meth:`run` runs it."""

    def __init__(self, served: ServedTools, name: str, arguments: dict[str, Any], client: str | None):
        self.served = served
        self.call = ToolCall(f"mcp-{secrets.token_hex(4)}", name, json.dumps(arguments, ensure_ascii=False))
        self.guards = served.guards(client)
        self.prepared: PreparedToolCall | None = None
        self.decision: Decision | None = None
        self.asked: Decision | None = None  # the policy's ask that the decision answers
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
        self.decision, self.asked = self.guards.settle(prepared)
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
        audit = self.guards.audit
        if audit is not None and audit.failure:
            result.content += f"\n[nami: the audit log {audit.path} could not be written: {audit.failure}]"
            result.ok = False
        return result

    def cancel(self) -> None:
        """Stop it: its process group is killed and its result says it was interrupted."""
        if self.prepared is not None:
            self.prepared.cancel()

    def _finish(self, result: ToolResult, started: float | None = None) -> None:
        self.result = result
        duration = None if started is None else round(time.time() - started, 3)
        self.guards.record(CallRecord(self.call, self.prepared, self.decision, result, started, duration,
                                      self.asked))
