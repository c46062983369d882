"""Finding and reading agent.yaml (and the user config, which has the same schema)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.config.mcp_servers import entry_problems as mcp_entry_problems
from nami_yaml.config.sandbox import absolute_paths as sandbox_absolute_paths
from nami_yaml.config.skills import SKILL_FILE, skill_files
from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.paths import expand_tool_paths, path_for_messages
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


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand_path(spec: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """``~`` and ``$VARS`` / ``${VARS}`` expanded; also the names of unset variables (left as written)."""
    unset: list[str] = []

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in env:
            return env[name]
        unset.append(name)
        return match.group(0)

    expanded = _VARIABLE.sub(value, spec)
    if expanded == "~" or expanded.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        expanded = home + expanded[1:]
    return os.path.expanduser(expanded), unset


@dataclass
class ConfigFile:
    path: Path
    data: dict[str, Any]
    doc: Document


def read_config(path: Path, env: Mapping[str, str] | None = None) -> ConfigFile:
    """Parse and validate one config file; raise SpecError with every problem found. Paths in it are
    made absolute (relative to the file) after ``~`` and ``$VARS`` from ``env`` are expanded."""
    env = os.environ if env is None else env
    name = path_for_messages(path)
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
    problems.extend(mcp_entry_problems(doc, data))
    data.pop("$schema", None)  # for editors only: not a setting
    base = path.resolve().parent
    sandbox_absolute_paths(data, base)

    def expanded(where: tuple[str | int, ...], spec: str) -> str:
        result, unset = expand_path(spec, env)
        problems.extend(doc.problem(where, f"${variable} is not set (in {spec!r})") for variable in unset)
        return result

    for key_path in PATH_KEYS:
        if key_path[0] in data:
            data[key_path[0]] = str((base / expanded(key_path, data[key_path[0]])).resolve())
    if isinstance(data.get("audit"), dict) and "path" in data["audit"]:
        # Not resolved: the log may not exist yet, and a symlinked shared folder should stay as named.
        data["audit"]["path"] = os.path.normpath(base / expanded(("audit", "path"), data["audit"]["path"]))
    if problems:
        raise SpecError(problems)
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
    for index, written in enumerate(tools.get("files", [])):
        spec = expanded(("tools", "files", index), written)
        if not expand_tool_paths(spec, base):
            shown = repr(written) if spec == written else f"{written!r} ({spec})"
            problems.append(doc.problem(("tools", "files", index), f"{shown} matches no tool file (relative to {base})"))
        resolved.append(spec if os.path.isabs(spec) else str(base / spec))
    if "files" in tools:
        tools["files"] = resolved
    skills = []
    for index, spec in enumerate(data.get("skills", [])):
        folder = str((base / os.path.expanduser(spec)).resolve())
        if not skill_files(folder):
            problems.append(doc.problem(("skills", index), f"{spec!r} holds no {SKILL_FILE}, nor do its "
                                                           f"sub-folders (relative to {base})"))
        skills.append(folder)
    if "skills" in data:
        data["skills"] = skills
    if problems:
        raise SpecError(problems)
    return ConfigFile(path=path.resolve(), data=data, doc=doc)
