"""The one guard list every call passes, whoever made it: the model (``run``, ``chat``, batch, the Python
API), a person (``nami tools call``), another agent (``mcp serve``), a dry run.

The policy decides (``policy.layers``: rules, writes that run code, the per-risk defaults) and the audit log
refuses to let anything run unrecorded, then records what happened. Paths differ only in the fallback (a
person's own call is their yes to what the per-risk defaults would ask) and in who is asked; the loop gets
the same pieces as its hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nami_yaml.agent.events import Event
from nami_yaml.agent.hooks import (
    AfterTool,
    Asker,
    BeforeTool,
    CallRecord,
    Decision,
    Hooks,
    answer,
    failed_opinion,
    strictest_opinion,
)
from nami_yaml.agent.toolbox import PreparedCall, Toolbox
from nami_yaml.app.approval_route import route, who_is_asked
from nami_yaml.app.change_watch import ChangeWatch, hook_key, watch_for
from nami_yaml.app.dry_run import DryRun
from nami_yaml.app.escalate import offer
from nami_yaml.app.hooks import RunHooks
from nami_yaml.app.project import Project
from nami_yaml.approvals.binding import digest_of
from nami_yaml.approvals.plans import plan_step_question
from nami_yaml.config.hooks import HookSpec, hook_specs
from nami_yaml.config.trust import needs_trust
from nami_yaml.policy.approval import ApprovalRequest, Approver, NobodyToAsk, build_asker, nobody_asked
from nami_yaml.policy.permissions import by_hand
from nami_yaml.policy.session import SessionApprovals
from nami_yaml.result import ToolResult
from nami_yaml.runners.plan_step import SOURCE as PLAN_SOURCE
from nami_yaml.session.store import new_session_id

if TYPE_CHECKING:  # imported when guards are built, so `nami tools list` does not load the rule engine
    from nami_yaml.policy.audit import AuditLog
    from nami_yaml.policy.layers import Fallback, Policy


@dataclass(frozen=True)
class Asking:
    """Who answers the questions of one path: the approver (None: nobody can be asked), ``--yes``,
    ``--approve RISK,…``; ``nobody`` words the refusal where nobody can be asked (``mcp serve``'s hint)."""

    approve: Approver | None = None
    assume_yes: bool = False
    approve_risks: Collection[str] = ()
    nobody: NobodyToAsk | None = None
    agent: str | None = None  # a named agent's calls are asked about with its name


def project_policy(project: Project) -> Policy:
    """The project's policy. Refuses (UntrustedProject) when its agent.yaml is not trusted: rules and
    permissions from an untrusted file are never honoured. SpecError for rules that cannot be used."""
    from nami_yaml.policy.layers import build_policy

    project.require_trust()
    return build_policy(project.settings, project.registry, project.context.workspace)


def open_audit(project: Project, *, via: str, session: str, on_error: Callable[[str], None] | None = None,
               client: str | None = None, agent: str | None = None, parent_session: str | None = None) -> AuditLog:
    """The audit log, checked writable now (AuditError before anything runs). ``client``: the program that
    asked (an MCP client's name), recorded in every line."""
    from nami_yaml.policy.audit import AuditContext, AuditLog, configured_path

    settings = project.settings
    trust = None if settings.config_path is None else (
        "trusted" if needs_trust(settings) else f"named by {settings.found_by}")
    context = AuditContext(session=session, workspace=str(project.context.workspace), via=via,
                           config=str(settings.config_path) if settings.config_path else None, config_trust=trust,
                           client=client, agent=agent, parent_session=parent_session)
    return AuditLog.open(configured_path(settings.audit.path), context, on_error)


class Guards:
    """Between a call and its tool, for one agent, server or person: the policy (with its fallback), any
    extra ``before_tool`` opinions, the asker, the audit log, or the dry run in its place.

    ``by_hand``: the calls come from the person who will be asked (``nami tools call``); what the per-risk
    defaults would ask runs, while rules and writes that run code still ask them."""

    def __init__(self, project: Project, asking: Asking = Asking(), *, via: str = "api", dry_run: bool = False,
                 session_id: str | None = None, on_error: Callable[[str], None] | None = None,
                 client: str | None = None, by_hand: bool = False, before_tool: Sequence[BeforeTool] = (),
                 agent: str | None = None, parent_session: str | None = None,
                 on_notice: Callable[[str], None] | None = None, run_hooks: bool = True,
                 replay: Callable[[Toolbox], Toolbox] | None = None):
        self.policy = project_policy(project)
        self.fallback: Fallback | None = by_hand_fallback(self.policy) if by_hand else None
        self.before_tool = list(before_tool)
        # "yes for this very call": the same digest (approvals/binding.py), for this agent's life, until it
        # expires as approvals do (approvals.expires after it was given)
        self.approvals = SessionApprovals(digest_of, expires=project.settings.approvals.expires)
        # A replay (app/replay.py) is a dry run whose calls get recorded results: the same guards, nothing runs.
        dry_run = dry_run or replay is not None
        self.dry_run = DryRun(who_is_asked(project), replay) if dry_run else None
        self._session_id = session_id or new_session_id()
        # A dry run records nothing in the audit log: nothing runs.
        self.audit = None if dry_run else open_audit(project, via=via, session=self._session_id, on_error=on_error,
                                                     client=client, agent=agent, parent_session=parent_session)
        # What a call may not change for later ones, looked at again after each call (app/change_watch.py).
        self.watch: ChangeWatch | None = None if dry_run else watch_for(project)
        self.on_notice = on_notice or on_error
        # agent.yaml's hooks: (app/hooks.py). A dry run runs PreToolUse hooks, which decide; nothing else.
        specs = hook_specs(project.settings) if run_hooks and replay is None else ()
        self.run_hooks: RunHooks | None = RunHooks(
            specs, project.context, lambda: self._session_id, report=self.on_notice, agent=agent,
            changed=self._hook_changes, audit_head=self.audit.head if self.audit is not None else None,
        ) if specs else None
        # --yes answers for nobody: a rerun without the sandbox is only ever a person's own yes.
        self.approve = asking.approve
        self.person_present = asking.approve is not None and not asking.assume_yes and not dry_run
        # (A dry run queues nothing: no queue folder is made for it.)
        approver = None if dry_run else route(
            project, asking.approve, session=lambda: self.session_id, mcp=asking.nobody is not None,
            not_notified=self.audit.not_notified if self.audit is not None else None)
        self.asker: Asker = self.dry_run.ask if self.dry_run else build_asker(
            approver, assume_yes=asking.assume_yes, approve_risks=asking.approve_risks,
            session=self.approvals, nobody=unplanned(asking.nobody), agent=asking.agent,
            before_asking=lambda call: plan_first(call, approver, session=self.approvals, agent=asking.agent))

    @property
    def session_id(self) -> str:
        return self._session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._session_id = value
        if self.audit is not None:
            self.audit.context.session = value

    # -- deciding -------------------------------------------------------------------------------------

    def decide(self, call: PreparedCall) -> Decision:
        """The strictest opinion of the policy, the extra guards and the audit log (which denies every call
        once it cannot record them). A guard that fails denies."""
        call = self.marked(call)
        policy = self.policy.decide(call, self.fallback).decision
        hook = strictest_opinion([self.run_hooks.pre_tool_use], call) if self.run_hooks is not None else None
        extra = [*self.before_tool, *([self.audit.before_tool] if self.audit is not None else [])]
        decided = strictest_opinion(extra, call, given=[policy, hook])
        assert decided is not None
        if hook is not None and hook.action == "allow" and decided.action != "allow" and self.run_hooks:
            self.run_hooks.allow_did_not_loosen(call, hook, decided)
        return decided

    def settle(self, call: PreparedCall) -> tuple[Decision, Decision | None]:
        """Decide, and ask where the decision asks, for a call made outside the loop: allow or deny, and the
        ask that it answers (None when nobody was asked), for the call's record."""
        try:
            decision = self.decide(call)
        except Exception as exc:
            return failed_opinion(exc), None
        if decision.action != "ask":
            return decision, None
        return answer(self.asker, call, decision)[0], decision

    def _hook_changes(self, spec: HookSpec) -> list[Path]:
        return self.watch.changed_for(hook_key(spec.source)) if self.watch is not None else []

    def marked(self, call: PreparedCall) -> PreparedCall:
        """The call as it is decided: an exec call where the code its tool runs changed during the session."""
        return self.watch.mark(call) if self.watch is not None else call

    def record(self, record: CallRecord) -> None:
        """After a call (run, refused or invalid): its audit line, or its entry in the dry run."""
        for recorder in self._recorders():
            recorder(record)

    # -- as the loop's hooks ----------------------------------------------------------------------------

    def rerun(self, call: PreparedCall, result: ToolResult) -> tuple[PreparedCall, Decision] | None:
        """``sandbox.escalate: ask``: where a person is present, offer to rerun a call the sandbox stopped
        once without it, as an exec call these guards do not deny (app/escalate.py). None: keep the result."""
        if self.approve is None or not self.person_present:
            return None
        return offer(call, result, self.approve, [self.decide])

    def hooks(self) -> Hooks:
        notes = [self.run_hooks.post_tool_use] if self.run_hooks is not None and self.dry_run is None else []
        return Hooks(before_tool=[self.decide], ask=self.asker, after_tool=self._recorders(), result_notes=notes,
                     rerun=self.rerun if self.person_present else None)

    def toolbox(self, toolbox: Toolbox) -> Toolbox:
        return self.dry_run.toolbox(toolbox) if self.dry_run else toolbox

    def events(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        return self.dry_run.events(emit) if self.dry_run else emit

    def _recorders(self) -> list[AfterTool]:
        recorders: list[AfterTool] = []
        if self.audit is not None:
            recorders.append(self.audit.after_tool)
        if self.dry_run is not None:
            recorders.append(self.dry_run.record)
        if self.watch is not None:
            watch, notice = self.watch, self.on_notice
            recorders.append(lambda record: watch.after_call(record, notice))
        recorders.append(discard_plan)  # last: the audit line above says the plan's hash
        return recorders


def plan_first(call: PreparedCall, approver: Approver | None, *, session: SessionApprovals | None = None,
               agent: str | None = None) -> Decision | None:
    """Before a person is asked about a call of a tool with ``plan:``: run its plan step (runners/plan_step.py),
    so the question shows the plan and the approval binds it; a plan step that fails refuses the call, its
    failure and stderr said to the model. Not where the approver can ask nobody now (an MCP client without
    elicitation): the call is refused unplanned. A plan step that would run without a sandbox runs only once
    a person approved running it (:func:`approve_plan_step`)."""
    step = getattr(call, "plan_step", None)
    can_ask = getattr(approver, "can_ask", None)
    if step is None or approver is None or (callable(can_ask) and not can_ask()):
        return None
    why = step.unsandboxed() if step.outcome is None else None
    if why is not None:
        refused = approve_plan_step(call, why, approver, session, agent)
        if refused is not None:
            return refused
    outcome = step.run()
    return None if outcome.ok else Decision.deny(outcome.failure, PLAN_SOURCE)


def approve_plan_step(call: PreparedCall, why: str, approver: Approver, session: SessionApprovals | None,
                      agent: str | None) -> Decision | None:
    """Ask, through the one approver (terminal, queue and its page and webhook, MCP elicitation), whether a
    plan step that would run without a sandbox (``why``) may run: a question of its own, showing and binding
    the plan step's command, before the plan and the question about the tool itself. None: approved (who
    approved is kept for the audit line); else the refusal, nothing of the call having run. A deny is
    absolute; where nobody can answer (no terminal, no queue) the approver's refusal says so."""
    question, pending = plan_step_question(call, why)
    reply = approver(ApprovalRequest(question, pending, session, agent))
    if reply is True or (isinstance(reply, Decision) and reply.action == "allow"):
        said = reply if isinstance(reply, Decision) else Decision.allow(source="user")
        call.plan_step.approved = ", ".join(part for part in (said.source, said.reason) if part)  # type: ignore[attr-defined]
        return None
    refusal = (f"the plan step of {call.name} ({call.plan_step.command_line()}) would run without a sandbox "  # type: ignore[attr-defined]
               f"({why}) and was not approved: neither it nor the tool ran")
    if isinstance(reply, Decision):  # a no with a reason, or an approver's refusal (no terminal, a timeout)
        return Decision.deny(reply.reason or refusal, reply.source or "user")
    return Decision.deny(refusal, "user")


def unplanned(nobody: NobodyToAsk | None) -> NobodyToAsk:
    """The refusal where nobody can be asked; for a call whose plan step would run without a sandbox, it
    also says that the plan step did not run, and how it could (bubblewrap, or someone to answer)."""

    def refuse(call: PreparedCall, pending: Decision) -> Decision:
        decided = (nobody or nobody_asked)(call, pending)
        step = getattr(call, "plan_step", None)
        why = step.unsandboxed() if step is not None and step.outcome is None else None
        if why is None or decided.action != "deny":
            return decided
        return Decision.deny(f"{decided.reason or 'nobody could be asked'}; its plan step ({step.command_line()}) "
                             f"did not run either: here it would run without a sandbox ({why}), so it runs only once "
                             "a person approved it. Install bubblewrap (plan steps then run sandboxed), or let "
                             "someone answer (a terminal, or approvals.via: queue)", decided.source)

    return refuse


def discard_plan(record: CallRecord) -> None:
    """After a call ended (ran, refused, rerun): its plan folder is removed."""
    step = getattr(record.prepared, "plan_step", None)
    if step is not None:
        step.discard()


def by_hand_fallback(policy: Policy) -> Fallback:
    return by_hand(policy.defaults)
