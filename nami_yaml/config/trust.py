"""Trusting a project's agent.yaml before nami runs what it declares.

An agent.yaml found by walking up from the current folder may come from a repository someone else wrote:
its tools are commands, its entry points are Python, and it can choose the endpoint and the permissions.
Like direnv, nami runs tools from such a file only after the user has trusted it, and trusts exactly the
bytes it was shown: the agent.yaml, its system prompt, its tool files and the Python files beside them. A
change to any of them asks again. A file named with --config or $NAMI_CONFIG, and the user config, are the
user's own choice and need no trust step.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.config.settings import Effective
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import default_state_dir

FOUND_BY_WALKING = "found from the current folder"


def trust_store() -> Path:
    return default_state_dir() / "trusted.json"


def needs_trust(effective: Effective) -> bool:
    return effective.config_path is not None and effective.found_by == FOUND_BY_WALKING


def covered_files(effective: Effective, registry: Registry) -> list[Path]:
    """Every file of the project that decides what runs: agent.yaml, the prompt, tools and their Python."""
    files: set[Path] = set()
    if effective.config_path:
        files.add(effective.config_path)
    if effective.get("system_file"):
        files.add(Path(effective.get("system_file")))
    for tool in registry:
        if tool.builtin:
            continue
        source = Path(tool.source.rsplit(":", 2)[0]).resolve()
        files.add(source)
        files.update(source.parent.glob("*.py"))  # entry-point modules live beside their YAML
    return sorted(files)


def fingerprint(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file).encode() + b"\0")
        try:
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def _load() -> dict[str, str]:
    try:
        data = json.loads(trust_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass
class TrustState:
    config: Path
    digest: str
    known: str | None  # the digest trusted before, if any

    @property
    def trusted(self) -> bool:
        return self.known == self.digest

    @property
    def changed(self) -> bool:
        return self.known is not None and not self.trusted


def trust_state(effective: Effective, registry: Registry) -> TrustState:
    assert effective.config_path is not None
    digest = fingerprint(covered_files(effective, registry))
    return TrustState(effective.config_path, digest, _load().get(str(effective.config_path)))


def remember(state: TrustState) -> None:
    """Record the trust atomically (a half-written store must not trust or forget anything by accident)."""
    store = trust_store()
    store.parent.mkdir(parents=True, exist_ok=True)
    data = _load()
    data[str(state.config)] = state.digest
    temporary = store.with_name(f".{store.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.chmod(temporary, 0o600)
    os.replace(temporary, store)


def summary(effective: Effective, registry: Registry) -> list[str]:
    """What a reviewer should look at before trusting: what the file changes and which tools it adds."""
    assert effective.config_path is not None
    project = effective.config_path.parent
    mine = str(effective.config_path)
    lines = [f"agent.yaml: {effective.config_path}"]
    for key in ("model.base_url", "model.api_key_env", "model.provider", "model.name", "permissions.write",
                "permissions.exec", "tools.fetch_url.allow_hosts", "tools.bash.max_timeout"):
        if effective.sources.get(key) == mine:
            lines.append(f"  sets {key} = {json.dumps(effective.get(key))}")
    for key in ("workspace", "system_file"):
        value = effective.get(key)
        if value and effective.sources.get(key) == mine:
            outside = project != Path(value) and project not in Path(value).parents
            lines.append(f"  sets {key} = {value}" + ("   <- OUTSIDE the project folder" if outside else ""))
    tools = [t for t in registry if not t.builtin]
    lines.append(f"  adds {len(tools)} tool{'s' if len(tools) != 1 else ''}:" if tools else "  adds no tools")
    for tool in tools:
        lines.append(f"    {tool.name} ({tool.risk}, {tool.runner.kind}) from {tool.source}")
    return lines
