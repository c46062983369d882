"""Where a question goes (``approvals.via``): to the approver the front end gave (the terminal, the Python
API's ``approve=``) or to the durable queue, or to both (a terminal run with ``via: queue``: the first
answer wins). The queue's answers are checked again when they come: the rules of agent.yaml and the user
config are read again and the trust fingerprint is taken again, so a rule changed to deny in between wins,
and a changed agent.yaml that is not trusted refuses."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from nami_yaml.agent.hooks import Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.app.project import Project
from nami_yaml.approvals.notify import Failed
from nami_yaml.approvals.queue import QueueApprover, queue_approver
from nami_yaml.approvals.store import APPROVED, DENIED, WITHDRAWN, QueueFolder
from nami_yaml.config.sections import ApprovalSettings
from nami_yaml.config.targets import project_targets
from nami_yaml.config.trust import needs_trust, trust_state
from nami_yaml.errors import NamiError
from nami_yaml.policy.approval import ApprovalRequest, Approver


def rules_now(project: Project) -> Callable[[PreparedCall], Decision | None]:
    """The decision on a call as the files say now (read again): a deny, or None when it may still run."""
    from nami_yaml.config.files import read_config, user_config_path
    from nami_yaml.policy.layers import build_policy

    def again(call: PreparedCall) -> Decision | None:
        settings = project.settings
        if needs_trust(settings) and not trust_state(settings, fresh=True).trusted:
            return Decision.deny(f"{settings.config_path} (or a file it loads) changed while the call waited for "
                                 "approval, and is not trusted: `nami trust` it, then call again", "trust")
        try:
            # The user config as it is now (made or changed since the run began), and agent.yaml's rules
            # as they are now (its trust was checked above).
            user = user_config_path(os.environ)
            files = [read_config(file.path) for file in settings.files if file.path != settings.user_config]
            if user.is_file():
                files.insert(0, read_config(user))
            fresh = replace(settings, files=files, memo={}, user_config=user if user.is_file() else None)
            policy = build_policy(fresh, project.registry, project.context.workspace)
            decided = policy.decide(call).decision
        except (NamiError, OSError) as exc:
            return Decision.deny(f"the rules cannot be read again: {exc}", "policy")
        return decided if decided.action == "deny" else None

    return again


def approvals_needed(project: Project) -> Callable[[PreparedCall], int]:
    """How many different people must approve a call: its target's ``approvals.required`` (else one)."""
    targets = project_targets(project.settings)

    def needed(call: PreparedCall) -> int:
        target = targets.get(getattr(call, "target", None))
        return target.approvals_required if target is not None else 1

    return needed


def route(project: Project, approve: Approver | None, *, session: Callable[[], str | None],
          mcp: bool = False, not_notified: Failed | None = None) -> Approver | None:
    """The approver of one agent or path. ``mcp``: ``nami mcp serve``'s clients time out long before a person
    answers from a queue, so the queue is not used there. ``not_notified``: where a failed webhook
    notification is recorded (the audit log)."""
    settings = project.settings.approvals
    if settings.via != "queue" or mcp:
        return approve
    queue = queue_approver(settings, folder=QueueFolder.open(settings.path), required=approvals_needed(project),
                           recheck=rules_now(project), session=session,
                           workspace=str(project.context.workspace), not_notified=not_notified)
    interactive = getattr(approve, "interactive", None)
    if approve is None or not callable(interactive):
        return queue  # nobody else to ask (batch, the API without approve=, a run without a terminal)
    return racing(queue, approve, interactive)


def racing(queue: QueueApprover, terminal: Approver, interactive: Callable[[], bool]) -> Approver:
    """Ask on the terminal and keep the question in the queue: the first answer wins. Without a terminal
    (checked at each question), the queue alone."""

    def approve(request: ApprovalRequest) -> Decision | bool:
        if not interactive():
            return queue(request)
        waiting = queue.open(request)
        from_queue: list[Decision] = []

        def elsewhere() -> Decision | None:
            decided = waiting.take()
            if decided is not None:
                from_queue.append(decided)
            return decided

        try:
            said = terminal(replace(request, elsewhere=elsewhere))
        except BaseException:
            waiting.update(WITHDRAWN, "the run ended while it waited")
            raise
        if from_queue:
            return queue.settle(waiting, request, from_queue[0])
        answered = said if isinstance(said, Decision) else Decision("allow" if said else "deny", None, "user")
        waiting.update(APPROVED if answered.action == "allow" else DENIED, "answered on the terminal")
        return said

    return approve


def queue_of(config: str | None = None, queue: str | None = None, *, create: bool = False) -> QueueFolder:
    """The queue folder ``nami approvals`` answers in: ``queue`` when given, else ``approvals.path`` of a
    trusted agent.yaml or of the user config (an untrusted agent.yaml decides nothing), else nami's own."""
    if queue is not None:
        return QueueFolder.open(queue, create=create)
    return QueueFolder.open(approval_settings(config).path, create=create)


def approval_settings(config: str | None = None) -> ApprovalSettings:
    """``approvals:`` as ``nami approvals`` reads it: of a trusted agent.yaml and the user config, else of the
    user config alone (an untrusted agent.yaml decides nothing: not where answers go, nor who approves)."""
    from nami_yaml.config.settings import load_settings
    from nami_yaml.project_request import ProjectRequest

    request = ProjectRequest(config=config)
    settings = load_settings(request)
    if needs_trust(settings) and not trust_state(settings).trusted:
        settings = load_settings(request.but(config=None, discover=False))
    return settings.approvals


def who_is_asked(project: Project) -> Callable[[PreparedCall], str | None]:
    """For a dry run (which queues nothing): who a call that asks would be asked, where the queue is used."""
    settings = project.settings.approvals
    needed = approvals_needed(project)

    def who(call: PreparedCall) -> str | None:
        if settings.via != "queue":
            return None
        count = needed(call)
        where = settings.path or "nami's state folder"
        return f"the approvals queue in {where}" + (f", {count} different approvers" if count > 1 else "")

    return who
