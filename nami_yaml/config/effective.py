"""The effective configuration as a value: the merged settings with the origin of every value, the config
files they came from, the API key found; and what follows from it alone (the variables kept from tools).
Built by config.settings; read by every layer above, which never needs to know how it was merged."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from nami_yaml.config.sections import (
    ApprovalSettings,
    AuditSettings,
    CompactionSettings,
    InstructionSettings,
    LimitSettings,
    ModelSettings,
    PermissionSettings,
    Sections,
    TelemetrySettings,
    ToolsSettings,
)
from nami_yaml.env_secrets import TELEMETRY_CREDENTIALS, EnvScrub
from nami_yaml.model.presets import PRESETS  # plain data, no openai
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.spec.yamlpos import Document, format_path


@dataclass
class ConfigFile:
    path: Path
    data: dict[str, Any]
    doc: Document
    read: tuple[Path, ...] = ()  # other files read into its settings (the answer_schema file)



@dataclass
class Effective:
    values: dict[str, Any]
    sources: dict[str, str]
    config_path: Path | None
    files: list[ConfigFile] = field(default_factory=list)
    api_key: str | None = None
    api_key_source: str = "unset"
    found_by: str = "none found"  # how the agent.yaml was found, for `nami config`
    user_config: Path | None = None  # the user config, when it was read
    cwd: Path | None = None  # where it was opened from: which AGENTS.md files a run reads (trust covers them)
    # What follows from these settings alone and costs a walk of the disk (config/loaded.py's listing, the
    # trust fingerprint), computed once per value; with_values() and with_model() make a new value.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def sections(self) -> Sections:
        """The settings as typed values, cast once (config/sections.py); read through the properties below.
        An Effective is a value: a changed one is a new Effective (config.settings.with_values)."""
        return Sections.from_values(self.values)

    @property
    def model(self) -> ModelSettings:
        return self.sections.model

    @property
    def tools(self) -> ToolsSettings:
        return self.sections.tools

    @property
    def limits(self) -> LimitSettings:
        return self.sections.limits

    @property
    def compaction(self) -> CompactionSettings:
        return self.sections.compaction

    @property
    def permissions(self) -> PermissionSettings:
        return self.sections.permissions

    @property
    def audit(self) -> AuditSettings:
        return self.sections.audit

    @property
    def approvals(self) -> ApprovalSettings:
        return self.sections.approvals

    @property
    def sandbox(self) -> SandboxSettings:
        return self.sections.sandbox

    @property
    def instructions(self) -> InstructionSettings:
        return self.sections.instructions

    @property
    def telemetry(self) -> TelemetrySettings:
        return self.sections.telemetry

    def config_file(self, path: Path | None) -> ConfigFile | None:
        return next((f for f in self.files if path is not None and f.path == path), None)

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def origin(self, dotted: str) -> str | None:
        """Where the value of a setting came from, as ``nami config`` shows it ("default", a file's path,
        "$NAMI_MODEL", "command line", ...); None for a setting no layer gave."""
        return self.sources.get(dotted)

    def where(self, *path: str | int) -> str:
        """``file:line:col: $.path`` for a value that came from a config file, else ``$.path``."""
        dotted = ".".join(str(p) for p in path if isinstance(p, str))
        for config in reversed(self.files):
            if self.sources.get(dotted, "").endswith(str(config.path)):
                line, col = config.doc.position(tuple(path))
                return f"{config.doc.file}:{line}:{col}: {format_path(tuple(path))}"
        return format_path(tuple(path))


def env_scrub_rules_of(files: list[ConfigFile]) -> EnvScrub:
    names: list[str] = []
    patterns: list[str] = []
    for config in files:
        scrub = config.data.get("env_scrub") or {}
        names += [n for n in scrub.get("names", []) if n not in names]
        patterns += [v for v in scrub.get("values", []) if v not in patterns]
    return EnvScrub(tuple(names), tuple(patterns))


def env_scrub_rules(effective: Effective) -> EnvScrub:
    """The ``env_scrub:`` patterns of every config file (user config and agent.yaml), added together."""
    return env_scrub_rules_of(effective.files)


def protected_env_names(effective: Effective) -> frozenset[str]:
    """Variables that may hold a model API key (or a trace collector's credentials): no tool ever sees them,
    whatever it asks for.

    Every provider's key variable, not only the one in use, and every ``api_key_env`` any config names:
    a project's agent.yaml must not be able to point ``api_key_env`` elsewhere and pass the real key
    through to one of its tools.
    """
    names = {"NAMI_API_KEY", "OPENAI_API_KEY", *TELEMETRY_CREDENTIALS}  # and a trace collector's credentials
    names.update(p["api_key_env"] for p in PRESETS.values() if p.get("api_key_env"))
    names.update(f.data["model"]["api_key_env"] for f in effective.files
                 if isinstance(f.data.get("model"), dict) and f.data["model"].get("api_key_env"))
    if effective.model.api_key_env:
        names.add(effective.model.api_key_env)
    return frozenset(names)
