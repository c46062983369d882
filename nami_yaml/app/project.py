"""From an agent.yaml (or none) to what every command and API user needs: the effective settings, the
tool registry, the runtime context, and the trust check before anything of a project runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nami_yaml.app.model_setup import check_before_trust, require_model
from nami_yaml.app.protected import protected_paths
from nami_yaml.app.tool_servers import ToolServers, not_started, start_tool_servers
from nami_yaml.app.toolset import build_registry
from nami_yaml.app.trust_summary import changes_of, review, warning_lines
from nami_yaml.config.effective import Effective, env_scrub_rules, protected_env_names
from nami_yaml.config.prompt import system_prompt
from nami_yaml.config.settings import load_settings
from nami_yaml.config.skills import Skill, load_skills
from nami_yaml.config.trust import TrustState, code_check, needs_trust, remember, trust_state
from nami_yaml.config.trust_diff import describe
from nami_yaml.errors import ConfigError
from nami_yaml.policy.layers import project_denied_programs
from nami_yaml.project_request import ProjectRequest, request_for
from nami_yaml.registry.executor import Executor
from nami_yaml.registry.registry import Registry
from nami_yaml.runners.sandbox.notice import run_notice
from nami_yaml.runners.spill import session_spill_dir
from nami_yaml.runtime import RuntimeContext, ToolSettings
from nami_yaml.session.store import SessionStore


@dataclass(frozen=True)
class TrustRequest:
    """What a trust callback is shown: a project's agent.yaml that is new or changed since trusted."""

    config: Path
    changed: bool  # trusted before, changed since
    summary: list[str]  # what it sets and which tools it adds, escaped for a terminal
    kind: str = "agent.yaml"  # or "task file" (nami batch run)
    what_changed: str = ""  # when changed: which files, in a few words ("tools/new.yaml added")
    # When changed and a snapshot of the trusted files was kept: the files that changed and their diff,
    # escaped (empty otherwise). A re-trust shows these first; the summary is there on request.
    diff: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """The summary's WARNING lines, which a re-trust shows even when it does not show the summary."""
        return warning_lines(self.summary)

    @property
    def status(self) -> str:
        return "changed since you trusted it" if self.changed else "is not trusted yet"

    @property
    def headline(self) -> str:
        """The project's state in one clause: which of its files changed, not "agent.yaml changed" when
        only a tool file beside it did."""
        if not self.changed:
            return f"{self.config} is not trusted yet (with its tools and prompt)"
        return f"{self.what_changed or self.config.name + ' changed'} since you trusted {self.config}"


TrustCallback = Callable[[TrustRequest], bool]
Trust = bool | TrustCallback | None
"""``None``: refuse an untrusted project. ``True``: run it this time without recording trust. A callable:
asked; when it returns True the trust is recorded (as ``nami trust`` does)."""


class UntrustedProject(ConfigError):
    def __init__(self, request: TrustRequest, message: str | None = None):
        self.request = request
        review = "`nami trust` shows the diff" if request.changed else "`nami tools list`, `nami config`"
        super().__init__(message or (
            f"{request.headline}. Review it ({review}), then run `nami trust` in "
            "this folder, or name it with --config / $NAMI_CONFIG."))


@dataclass
class Project:
    settings: Effective
    registry: Registry
    context: RuntimeContext
    # True once trusted (or when no trust is needed); None when nobody checked (opened to look, not to run).
    trusted: bool | None = None
    cwd: Path | None = None  # where it was opened from; the workspace is often the project's root above it
    servers: ToolServers = field(default_factory=lambda: ToolServers(started=False))  # agent.yaml mcp_servers:
    trusted_digest: str | None = None  # the fingerprint it was trusted with (when it needed trust)
    sandbox_noticed: bool = False  # the notice that tools run without the sandbox here was taken

    def executor(self) -> Executor:
        return Executor(self.registry, self.context)

    def is_trusted(self) -> bool:
        """Whether its agent.yaml may decide what runs, checked quietly (nobody is asked)."""
        if self.trusted is None:
            if needs_trust(self.settings):
                state = trust_state(self.settings)
                self.trusted, self.trusted_digest = state.trusted, state.digest if state.trusted else None
            else:
                self.trusted = True
        return self.trusted

    def require_trust(self) -> None:
        """Refuse an untrusted project before anything of it runs or decides (UntrustedProject)."""
        if not self.is_trusted():
            ensure_trusted(self.settings, self.registry, None)

    def start_servers(self) -> None:
        """Start the MCP servers of ``mcp_servers:`` (in parallel; once; only for a trusted project) and add
        their tools to the registry. What fails becomes a notice (:meth:`take_notices`), never an error."""
        if self.servers.started:
            return
        if self.is_trusted():
            self.servers, self.registry = start_tool_servers(self.settings, self.context, self.registry,
                                                             self.trusted_digest)
            self.context = replace(self.context, tool_groups=self.registry.groups())
        else:
            self.servers = not_started(self.settings, "this agent.yaml is not trusted yet (`nami trust`)")

    def take_notices(self) -> list[str]:
        """Problems of its tool sources not reported yet (an MCP server that did not start or died), once each."""
        return self.servers.take_notices()

    def sandbox_notice(self) -> str | None:
        """Once per project (one run, one chat): that its tools' processes cannot be sandboxed here, why,
        and how to get it; None where they are, or with ``sandbox.mode: off``."""
        if self.sandbox_noticed:
            return None
        self.sandbox_noticed = True
        return run_notice(self.context)

    def close(self) -> None:
        """Stop its MCP servers (nami's exit does too). Idempotent."""
        self.servers.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def system_prompt(self) -> str:
        """The system message every conversation starts with."""
        return system_prompt(self.settings, self.context.workspace, skills=self.context.skills.values(), cwd=self.cwd)


def open_project(request: ProjectRequest | str | Path | None = None, *, trust: Trust = None, will_run: bool = False,
                 tool_servers: bool | None = None, needs_model: bool = False, **keywords: Any) -> Project:
    """The one opener: ``request`` (which project, :class:`ProjectRequest`) -> its settings -> the model
    check -> what it loads (skills, tools) -> trust -> the runtime context -> its MCP servers.

    ``will_run``: tools are about to run, so a project agent.yaml found by walking up must be trusted (see
    :data:`Trust`); looking at tools needs no trust. ``tool_servers``: start the MCP servers of
    ``mcp_servers:`` and add their tools (None: when ``will_run``; True: also to look, if the project is
    trusted); they stop with :meth:`Project.close` or nami's exit. ``needs_model``: a model will be built
    from these settings, so a missing model name, endpoint or key is a ConfigError raised first, before the
    trust question (see nami_yaml.app.model_setup). ``request.target``: every call of a tool that runs on a
    target runs on this one (ConfigError if the project has no such target).

    For the Python API's older spelling, ``request`` may be the agent.yaml's path (or None) with the rest as
    keywords: ``cwd``, ``env``, ``flags``, ``extra_tools``, ``discover``, ``target``.

    Computed once per open: the settings, the files they load (config/loaded.py, kept with the settings)
    and the trust state. Read again on purpose while a run goes on: a module's bytes before an entry point
    imports it (``code_check``), and the trust fingerprint where a later check must see the files as they
    are then (``config.trust.trust_state(…, fresh=True)``)."""
    request = as_request(request, keywords)
    if request.cwd is None:
        request = request.but(cwd=Path.cwd())  # read once: every stage below opens from the same folder
    effective = load_settings(request)
    if needs_model and needs_trust(effective):
        check_before_trust(effective, lambda: load_settings(request.but(config=None, discover=False)))
    elif needs_model:
        require_model(effective)
    skills = load_skills(effective)
    registry = build_registry(effective, list(request.tools), base=request.folder, skills=skills,
                              target=request.target)
    trusted = None if needs_trust(effective) else True
    digest = None
    if will_run and trusted is None:
        digest = ensure_trusted(effective, registry, trust)
        trusted = True
    context = runtime_context(effective, env=request.environment, cwd=request.folder, registry=registry,
                              skills=skills, extra_tools=request.tools)
    project = Project(effective, registry, context, trusted, cwd=request.folder, trusted_digest=digest)
    if tool_servers or (tool_servers is None and will_run):
        project.start_servers()
    return project


def as_request(request: ProjectRequest | str | Path | None, keywords: Mapping[str, Any]) -> ProjectRequest:
    """``request`` itself, or a request from the older keywords (``open_project("agent.yaml", cwd=…)``)."""
    if isinstance(request, ProjectRequest):
        if keywords:
            raise TypeError(f"open_project: give a ProjectRequest or keywords, not both ({', '.join(keywords)})")
        return request
    unknown = set(keywords) - {"cwd", "env", "flags", "extra_tools", "discover", "target"}
    if unknown:
        raise TypeError(f"open_project: unexpected keywords {', '.join(sorted(unknown))}")
    extra = dict(keywords)
    return request_for(request, tools=tuple(extra.pop("extra_tools", None) or ()), **extra)


def ensure_trusted(effective: Effective, registry: Registry, trust: Trust) -> str:
    """The fingerprint the project is trusted with, once trusted (asked through ``trust``); UntrustedProject
    if it is not."""
    state = trust_state(effective)
    if state.trusted or trust is True:
        return state.digest
    request = trust_request(effective, registry, state)
    if callable(trust) and trust(request):
        remember(state)
        return state.digest
    raise UntrustedProject(request)


def trust_request(effective: Effective, registry: Registry, state: TrustState) -> TrustRequest:
    changes = changes_of(effective, state.files) if state.changed else None
    seen = review(effective, registry, changes)
    return TrustRequest(state.config, state.changed, seen.overview, diff=seen.changed,
                        what_changed=describe(changes, state.config.parent) if state.changed else "")


def tool_settings(effective: Effective) -> ToolSettings:
    limits, tools = effective.limits, effective.tools
    return ToolSettings(
        default_timeout=limits.tool_timeout,
        max_output=limits.max_output,
        max_saved_output=limits.max_saved_output,
        bash_timeout=tools.bash.timeout,
        bash_max_timeout=tools.bash.max_timeout,
        fetch_allow_hosts=tools.fetch_url.allow_hosts,
        fetch_max_bytes=tools.fetch_url.max_bytes,
        fetch_timeout=tools.fetch_url.timeout,
    )


def runtime_context(effective: Effective, *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                    registry: Registry | None = None, skills: Sequence[Skill] = (),
                    extra_tools: Sequence[str] = ()) -> RuntimeContext:
    """What tools may know: the workspace, limits, environment, the saved-output folder, and the text
    read on demand (the ``registry``'s tools' docs, the ``skills``); and what guards them: the variables
    kept from them, the paths where a write runs code, and (for a project that needed trust) the check
    every module an entry point imports from the project must pass."""
    workspace = Path(effective.get("workspace") or cwd or Path.cwd())
    if not workspace.is_dir():
        raise ConfigError(f"the workspace {workspace} is not a folder")
    return RuntimeContext(
        workspace=workspace, settings=tool_settings(effective), host_env=dict(os.environ if env is None else env),
        protected_env=protected_env_names(effective), env_scrub=env_scrub_rules(effective),
        code_check=code_check(effective) if needs_trust(effective) else None,
        protected_paths=protected_paths(effective, list(extra_tools), cwd),
        spill_dir=session_spill_dir(keep=SessionStore().has),
        sandbox=effective.sandbox,  # the user config's and agent.yaml's, combined
        denied_programs=project_denied_programs(effective),  # masked in bash calls' sandbox
        tool_docs={t.name: t.docs for t in registry or () if t.docs is not None},
        skills={skill.name: skill for skill in skills},
        tool_groups=registry.groups() if registry is not None else {},
    )
