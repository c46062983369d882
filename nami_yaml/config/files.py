"""Finding and reading agent.yaml (and the user config, which has the same schema)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.registry.loader import display_path, expand_tool_paths
from nami_yaml.runtime import xdg_folder
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, parse_yaml, read_source

CONFIG_NAME = "agent.yaml"
PATH_KEYS = (("system_file",), ("workspace",))


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    return xdg_folder("XDG_CONFIG_HOME", ".config", env) / "nami" / "config.yaml"


def find_config(explicit: str | None, env: Mapping[str, str], cwd: Path) -> tuple[Path | None, str]:
    """``--config``, then ``NAMI_CONFIG``, then agent.yaml in the current folder or any parent."""
    if explicit:
        return _must_exist(Path(explicit), "--config"), "--config"
    if env.get("NAMI_CONFIG"):
        return _must_exist(Path(env["NAMI_CONFIG"]), "NAMI_CONFIG"), "NAMI_CONFIG"
    for folder in (cwd, *cwd.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate, "found from the current folder"
    return None, "none found"


def _must_exist(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"{origin} names {path}, which is not a file")
    return path.resolve()


@dataclass
class ConfigFile:
    path: Path
    data: dict[str, Any]
    doc: Document


def read_config(path: Path) -> ConfigFile:
    """Parse and validate one config file; raise SpecError with every problem found."""
    name = display_path(path)
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        raise SpecError([Problem(name, 1, 1, "$", f"cannot read config: {exc}")]) from None
    doc, problems = parse_yaml(text, name)
    if doc is None:
        raise SpecError(problems)
    data = doc.value if doc.value is not None else {}
    if not isinstance(data, dict):
        raise SpecError([*problems, doc.problem((), f"agent.yaml must be a mapping, found {type(data).__name__}")])
    problems.extend(problems_for(doc, data, (), validator("agent")))
    if "system" in data and "system_file" in data:
        problems.append(doc.problem(("system_file",), "give either system or system_file, not both", key=True))
    if problems:
        raise SpecError(problems)
    base = path.resolve().parent
    for key_path in PATH_KEYS:
        if key_path[0] in data:
            data[key_path[0]] = str((base / os.path.expanduser(data[key_path[0]])).resolve())
    if "system_file" in data:
        # Read now, so a missing or undecodable prompt is a config error that `nami check` reports.
        try:
            data["system"] = read_source(Path(data["system_file"]))
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            problems.append(doc.problem(("system_file",), f"cannot read {data['system_file']}: {reason}"))
    if "workspace" in data and not Path(data["workspace"]).is_dir():
        problems.append(doc.problem(("workspace",), f"workspace {data['workspace']} is not a folder"))
    tools = data.get("tools") or {}
    resolved = []
    for index, spec in enumerate(tools.get("files", [])):
        if not expand_tool_paths(spec, base):
            problems.append(doc.problem(("tools", "files", index), f"{spec!r} matches no tool file (relative to {base})"))
        resolved.append(spec if os.path.isabs(os.path.expanduser(spec)) else str(base / spec))
    if "files" in tools:
        tools["files"] = resolved
    if problems:
        raise SpecError(problems)
    return ConfigFile(path=path.resolve(), data=data, doc=doc)
