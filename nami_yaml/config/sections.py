"""The effective settings as typed values, one frozen section per top-level key of agent.yaml, each value cast
to its type once: ``effective.limits.max_steps`` is an int wherever it is read. Built from the merged values
(Effective.values) laid over the defaults (nami_yaml.setting_defaults), so a key the layers left out has
its default here too. Reading a setting by dotted name (``Effective.get("limits.max_steps")``) is for
``nami config`` and config/settings alone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.config.sandbox import sandbox_settings
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.setting_defaults import (
    APPROVALS,
    COMPACTION,
    INSTRUCTIONS,
    LIMITS,
    MODEL,
    PERMISSIONS,
    TELEMETRY,
    TOOLS,
)


def _over(defaults: Mapping[str, Any], value: Any) -> dict[str, Any]:
    return {**defaults, **(value if isinstance(value, Mapping) else {})}


def _optional(cast: Any, value: Any) -> Any:
    return None if value is None else cast(value)


@dataclass(frozen=True)
class ModelSettings:
    """``model:``. ``name`` and ``base_url`` are None until a preset, a file, $NAMI_MODEL or a flag sets them.
    ``temperature`` is sent as written (an int stays an int on the wire)."""

    provider: str
    name: str | None
    base_url: str | None
    api_key_env: str | None
    stream: bool
    retries: int
    timeout: float
    temperature: float | None
    max_tokens: int | None
    options: Mapping[str, Any]
    quirks: Mapping[str, Any]
    pricing: Mapping[str, Any] | None
    context_window: int | None

    @classmethod
    def from_mapping(cls, value: Any) -> ModelSettings:
        data = _over(MODEL, value)
        return cls(provider=str(data["provider"]), name=_optional(str, data.get("name")),
                   base_url=_optional(str, data.get("base_url")), api_key_env=data.get("api_key_env") or None,
                   stream=bool(data["stream"]), retries=int(data["retries"]), timeout=float(data["timeout"]),
                   temperature=data.get("temperature"), max_tokens=_optional(int, data.get("max_tokens")),
                   options=dict(data.get("options") or {}), quirks=dict(data.get("quirks") or {}),
                   pricing=dict(data["pricing"]) if data.get("pricing") else None,
                   context_window=int(data["context_window"]) if data.get("context_window") else None)


@dataclass(frozen=True)
class BashSettings:
    timeout: float
    max_timeout: float


@dataclass(frozen=True)
class FetchUrlSettings:
    allow_hosts: tuple[str, ...]
    max_bytes: int
    timeout: float


@dataclass(frozen=True)
class ToolsSettings:
    """``tools:``. ``builtin`` is ``"default"`` or the names listed; ``on_demand`` is ``"auto"``, True or False."""

    builtin: str | tuple[str, ...]
    files: tuple[Any, ...]
    library: tuple[str, ...]
    on_demand: str | bool
    eager: tuple[str, ...]
    files_on_demand: int | None  # characters of the project's own tool definitions sent at start; None: any
    bash: BashSettings
    fetch_url: FetchUrlSettings

    @classmethod
    def from_mapping(cls, value: Any) -> ToolsSettings:
        data = _over(TOOLS, value)
        bash, fetch = _over(TOOLS["bash"], data["bash"]), _over(TOOLS["fetch_url"], data["fetch_url"])
        builtin = data["builtin"]
        return cls(builtin=builtin if isinstance(builtin, str) else tuple(builtin or ()),
                   files=tuple(data["files"] or ()), library=tuple(data.get("library") or ()),
                   on_demand=data["on_demand"], eager=tuple(data["eager"] or ()),
                   files_on_demand=None if data["files_on_demand"] is False else int(data["files_on_demand"]),
                   bash=BashSettings(float(bash["timeout"]), float(bash["max_timeout"])),
                   fetch_url=FetchUrlSettings(tuple(fetch["allow_hosts"] or ()), int(fetch["max_bytes"]),
                                              float(fetch["timeout"])))


@dataclass(frozen=True)
class LimitSettings:
    """``limits:``. ``max_cost`` is None when no limit is set."""

    max_steps: int
    tool_timeout: float
    max_output: int
    max_parallel_tools: int
    max_agent_depth: int
    max_saved_output: int
    schema_retries: int
    max_response_bytes: int
    max_tool_calls_per_turn: int
    max_cost: float | None

    @classmethod
    def from_mapping(cls, value: Any) -> LimitSettings:
        data = _over(LIMITS, value)
        return cls(max_steps=int(data["max_steps"]), tool_timeout=float(data["tool_timeout"]),
                   max_output=int(data["max_output"]), max_parallel_tools=int(data["max_parallel_tools"]),
                   max_agent_depth=int(data["max_agent_depth"]), max_saved_output=int(data["max_saved_output"]),
                   schema_retries=int(data["schema_retries"] or 0),
                   max_response_bytes=int(data["max_response_bytes"]),
                   max_tool_calls_per_turn=int(data["max_tool_calls_per_turn"]),
                   max_cost=_optional(float, data.get("max_cost")))


@dataclass(frozen=True)
class CompactionSettings:
    """``compaction:`` (session.compaction.Compactor's CompactionSettings is built from it)."""

    enabled: bool
    threshold: float
    reserve: int
    keep_recent: int

    @classmethod
    def from_mapping(cls, value: Any) -> CompactionSettings:
        data = _over(COMPACTION, value)
        return cls(bool(data["enabled"]), float(data["threshold"]), int(data["reserve"]), int(data["keep_recent"]))


@dataclass(frozen=True)
class PermissionSettings:
    """``permissions:``: allow, ask or deny by risk; ``read`` is None unless a file sets it (the policy
    then allows reads)."""

    read: str | None
    write: str
    exec: str

    @classmethod
    def from_mapping(cls, value: Any) -> PermissionSettings:
        data = _over(PERMISSIONS, value)
        return cls(_optional(str, data.get("read")), str(data["write"]), str(data["exec"]))

    def as_mapping(self) -> dict[str, str]:
        """The risks set, as the policy takes them (nami_yaml.policy.RiskPolicy)."""
        given = {"read": self.read, "write": self.write, "exec": self.exec}
        return {risk: value for risk, value in given.items() if value is not None}


@dataclass(frozen=True)
class AuditSettings:
    """``audit:``. ``path`` as written (None: the default log, $XDG_STATE_HOME/nami/audit.jsonl)."""

    path: str | None

    @classmethod
    def from_mapping(cls, value: Any) -> AuditSettings:
        data = value if isinstance(value, Mapping) else {}
        return cls(_optional(str, data.get("path")))


_UNITS = {"s": 1, "m": 60, "h": 3600}


def duration_seconds(value: Any) -> float:
    """A duration as the schema takes it: seconds, or text such as ``90s``, ``15m``, ``2h``."""
    if isinstance(value, str) and value[-1:] in _UNITS:
        return float(value[:-1]) * _UNITS[value[-1]]
    return float(value)


@dataclass(frozen=True)
class ApprovalSettings:
    """``approvals:``. ``path`` as written (None: the queue folder in nami's state folder); ``timeout`` and
    ``expires`` in seconds; ``approvers``: name -> the SHA-256 of their token ("" when they have none);
    ``approver_keys``: name -> the SSH public key their answers are signed with, for those who declare one."""

    via: str
    path: str | None
    timeout: float
    expires: float
    approvers: Mapping[str, str]
    notify: Mapping[str, Any]
    page_url: str | None
    approver_keys: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, value: Any) -> ApprovalSettings:
        data = _over(APPROVALS, value)
        declared = data.get("approvers") or {}
        approvers = {str(name): str((spec or {}).get("token_sha256", "")).lower() for name, spec in declared.items()}
        keys = {str(name): " ".join(str(spec["ssh_public_key"]).split())
                for name, spec in declared.items() if (spec or {}).get("ssh_public_key")}
        return cls(via=str(data["via"]), path=_optional(str, data.get("path")),
                   timeout=duration_seconds(data["timeout"]), expires=duration_seconds(data["expires"]),
                   approvers=approvers, notify=dict(data.get("notify") or {}),
                   page_url=_optional(str, data.get("page_url")), approver_keys=keys)


@dataclass(frozen=True)
class InstructionSettings:
    """``instructions:``: the project's AGENTS.md files in the system prompt (at most ``max_bytes`` of them),
    and skills found under ``.agents/skills`` (config/instructions.py, docs/conventions.md)."""

    agents_md: bool
    max_bytes: int
    agents_skills: bool

    @classmethod
    def from_mapping(cls, value: Any) -> InstructionSettings:
        data = _over(INSTRUCTIONS, value)
        return cls(bool(data["agents_md"]), int(data["max_bytes"]), bool(data["agents_skills"]))


@dataclass(frozen=True)
class TelemetrySettings:
    """``telemetry:``. ``enabled``: True, False or ``"auto"`` (on when the OTEL_EXPORTER_OTLP_* variables name a
    collector); ``endpoint`` None: the variables'; ``content``: prompts, arguments and output in the spans."""

    enabled: bool | str
    endpoint: str | None
    service_name: str
    content: bool
    resource_attributes: Mapping[str, str]

    @classmethod
    def from_mapping(cls, value: Any) -> TelemetrySettings:
        data = _over(TELEMETRY, value)
        enabled = data["enabled"]
        return cls(enabled=enabled if isinstance(enabled, bool) else str(enabled),
                   endpoint=_optional(str, data.get("endpoint")), service_name=str(data["service_name"]),
                   content=bool(data["content"]),
                   resource_attributes={str(k): str(v) for k, v in (data["resource_attributes"] or {}).items()})


@dataclass(frozen=True)
class Sections:
    """Every typed section of one Effective (its ``model``, ``tools``, ``limits``, ... properties)."""

    model: ModelSettings
    tools: ToolsSettings
    limits: LimitSettings
    compaction: CompactionSettings
    permissions: PermissionSettings
    audit: AuditSettings
    sandbox: SandboxSettings
    instructions: InstructionSettings
    approvals: ApprovalSettings
    telemetry: TelemetrySettings

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Sections:
        return cls(model=ModelSettings.from_mapping(values.get("model")),
                   tools=ToolsSettings.from_mapping(values.get("tools")),
                   limits=LimitSettings.from_mapping(values.get("limits")),
                   compaction=CompactionSettings.from_mapping(values.get("compaction")),
                   permissions=PermissionSettings.from_mapping(values.get("permissions")),
                   audit=AuditSettings.from_mapping(values.get("audit")),
                   sandbox=sandbox_settings(values.get("sandbox")),
                   instructions=InstructionSettings.from_mapping(values.get("instructions")),
                   approvals=ApprovalSettings.from_mapping(values.get("approvals")),
                   telemetry=TelemetrySettings.from_mapping(values.get("telemetry")))
