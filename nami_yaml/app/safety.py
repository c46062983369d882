"""What guards every call, assembled from the settings: the policy (rules and per-risk defaults, honoured
only for a trusted project), the audit log, and the session id lines are recorded under. The Agent and
``nami tools call`` (and later the MCP server) build these here, so they decide and record alike."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from nami_yaml.agent.events import Event
from nami_yaml.agent.hooks import AfterTool, Asker, BeforeTool, Hooks
from nami_yaml.agent.toolbox import Toolbox
from nami_yaml.app.dry_run import DryRun
from nami_yaml.app.escalate import rerun_hook
from nami_yaml.app.project import Project
from nami_yaml.config.trust import needs_trust
from nami_yaml.policy.approval import Approver, build_asker
from nami_yaml.policy.permissions import CodeWrites
from nami_yaml.policy.session import SessionApprovals
from nami_yaml.session.store import new_session_id

if TYPE_CHECKING:  # imported when an agent is built, so `nami tools list` does not load the rule engine
    from nami_yaml.policy.audit import AuditLog
    from nami_yaml.policy.layers import Policy


def project_policy(project: Project) -> Policy:
    """The project's policy. Refuses (UntrustedProject) when its agent.yaml is not trusted: rules and
    permissions from an untrusted file are never honoured. SpecError for rules that cannot be used."""
    from nami_yaml.policy.layers import build_policy

    project.require_trust()
    return build_policy(project.settings, project.registry, project.context.workspace)


def open_audit(project: Project, *, via: str, session: str, on_error: Callable[[str], None] | None = None,
               client: str | None = None) -> AuditLog:
    """The audit log, checked writable now (AuditError before anything runs). ``client``: the program that
    asked (an MCP client's name), recorded in every line."""
    from nami_yaml.policy.audit import AuditContext, AuditLog, configured_path

    settings = project.settings
    trust = None if settings.config_path is None else (
        "trusted" if needs_trust(settings) else f"named by {settings.found_by}")
    context = AuditContext(session=session, workspace=str(project.context.workspace), via=via,
                           config=str(settings.config_path) if settings.config_path else None, config_trust=trust,
                           client=client)
    return AuditLog.open(configured_path(settings.get("audit.path")), context, on_error)


class Safeguards:
    """Everything between the model's call and the tool, for one agent: the policy, the asker (session
    approvals, ``--approve``, ``--yes``, the approver), the audit log, or the dry run in its place."""

    def __init__(self, project: Project, *, approve: Approver | None = None, assume_yes: bool = False,
                 approve_risks: Collection[str] = (), dry_run: bool = False, session_id: str | None = None,
                 via: str = "api", on_error: Callable[[str], None] | None = None):
        self.policy = project_policy(project)
        self.code_writes = CodeWrites(project.settings.get("permissions"))
        self.approvals = SessionApprovals()  # "yes for this tool with these values", for this agent's life
        self.dry_run = DryRun() if dry_run else None
        self._session_id = session_id or new_session_id()
        # A dry run records nothing in the audit log: nothing runs.
        self.audit = None if dry_run else open_audit(project, via=via, session=self._session_id, on_error=on_error)
        self.asker: Asker | None = self.dry_run.ask if self.dry_run else build_asker(
            approve, assume_yes=assume_yes, approve_risks=approve_risks, session=self.approvals)
        self.approve = approve
        # --yes answers for nobody: a rerun without the sandbox is only ever a person's own yes.
        self.person_present = approve is not None and not assume_yes and not dry_run

    @property
    def session_id(self) -> str:
        return self._session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._session_id = value
        if self.audit is not None:
            self.audit.context.session = value

    def hooks(self, before_tool: Sequence[BeforeTool] = ()) -> Hooks:
        guards: list[BeforeTool] = [self.policy, self.code_writes, *before_tool]
        recorders: list[AfterTool] = []
        if self.audit is not None:
            guards.append(self.audit.before_tool)
            recorders.append(self.audit.after_tool)
        if self.dry_run is not None:
            recorders.append(self.dry_run.record)
        rerun = rerun_hook(self.approve, [self.policy, self.code_writes, *before_tool],
                           person_present=self.person_present)
        return Hooks(before_tool=guards, ask=self.asker, after_tool=recorders, rerun=rerun)

    def toolbox(self, toolbox: Toolbox) -> Toolbox:
        return self.dry_run.toolbox(toolbox) if self.dry_run else toolbox

    def events(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        return self.dry_run.events(emit) if self.dry_run else emit
