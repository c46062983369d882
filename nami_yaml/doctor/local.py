"""Checks of this machine and this project that need no network: Python, agent.yaml and its tools, trust,
the API key, the programs the tools run, ripgrep, nami's folders and the schema copies."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.app.model_setup import destination
from nami_yaml.app.scaffold import schema_files
from nami_yaml.app.toolset import build_registry
from nami_yaml.config.effective import Effective
from nami_yaml.config.settings import load_settings, mask
from nami_yaml.config.trust import needs_trust, trust_state
from nami_yaml.config.trust_diff import changes_since_trusted, describe
from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.paths import path_for_messages
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.overview import executables
from nami_yaml.registry.registry import Registry
from nami_yaml.xdg import default_state_dir, user_data_dir

MIN_PYTHON = (3, 10)
SHOWN_PROBLEMS = 10


def python_check() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info < MIN_PYTHON:
        return Check("python", FAIL, f"{version}: nami needs Python {'.'.join(map(str, MIN_PYTHON))} or newer")
    if sys.prefix != sys.base_prefix:
        return Check("python", OK, f"{version} in a virtual environment ({sys.prefix})")
    return Check("python", WARN, f"{version}, not in a virtual environment ({sys.executable}): pip installs "
                                 "there change the system's Python; pipx or a venv keeps nami apart")


@dataclass
class ConfigFindings:
    checks: list[Check] = field(default_factory=list)
    settings: Effective | None = None
    registry: Registry | None = None
    workspace: Path | None = None
    project_root: Path | None = None


def config_checks(config: str | Path | None, *, env: Mapping[str, str], cwd: Path) -> ConfigFindings:
    """agent.yaml found and valid, its tools valid, the project trusted, the API key present."""
    found = ConfigFindings()
    try:
        effective = load_settings(ProjectRequest(config=None if config is None else str(config), cwd=cwd, env=env))
    except SpecError as exc:
        found.checks.append(_problems_check("config", "agent.yaml is not valid", exc))
        return found
    except ConfigError as exc:
        found.checks.append(Check("config", FAIL, str(exc)))
        return found
    found.settings = effective
    if effective.config_path is None:
        found.checks.append(Check("config", WARN, "no agent.yaml here or above: nami runs with its defaults "
                                                   "(`nami init` creates one)"))
    else:
        found.project_root = effective.config_path.parent
        found.checks.append(Check("config", OK, f"{effective.config_path} ({effective.found_by}), valid"))
    try:
        found.registry = build_registry(effective)
        found.workspace = Path(effective.get("workspace") or cwd)
        count = len(found.registry)
        found.checks.append(Check("tools", OK, f"{count} tool{'s' if count != 1 else ''} load"))
    except SpecError as exc:
        found.checks.append(_problems_check("tools", "some tool files are not valid", exc))
    except ConfigError as exc:
        found.checks.append(Check("tools", FAIL, str(exc)))
    if found.registry is not None and effective.config_path is not None:
        found.checks.append(_trust_check(effective))
    found.checks.append(_api_key_check(effective))
    return found


def _problems_check(name: str, message: str, exc: SpecError) -> Check:
    lines = [str(p) for p in exc.problems]
    more = [f"... and {len(lines) - SHOWN_PROBLEMS} more (`nami check` lists them all)"] \
        if len(lines) > SHOWN_PROBLEMS else []
    return Check(name, FAIL, f"{message}: {len(lines)} problem{'s' if len(lines) != 1 else ''}",
                 lines[:SHOWN_PROBLEMS] + more)


def untrusted_endpoint(effective: Effective, without_project: Callable[[], Effective]) -> Check | None:
    """The endpoint check withheld while an agent.yaml that is not trusted chooses where the key goes: the
    endpoint or the key variable, against what they would be without it (``without_project``). Listing the
    models sends the API key, and an untrusted file may name any URL and any variable
    (``api_key_env: AWS_SECRET_ACCESS_KEY``). An endpoint chosen by $NAMI_BASE_URL, a flag or the user
    config is checked before trust: writing ``provider: deepseek`` as the default is no choice of its own."""
    if effective.config_path is None or not needs_trust(effective) or trust_state(effective).trusted:
        return None
    if destination(effective) == destination(without_project()):
        return None
    mine = str(effective.config_path)
    chosen = [k for k in ("base_url", "provider", "api_key_env") if effective.sources.get(f"model.{k}") == mine]
    return Check("endpoint", WARN, f"not checked: agent.yaml chooses the model's {', '.join(chosen)} and is not "
                                   "trusted; nami sends your API key only where a trusted file says (`nami trust`)")


def _trust_check(effective: Effective) -> Check:
    if not needs_trust(effective):
        return Check("trust", OK, f"not needed: named with {effective.found_by}")
    state = trust_state(effective)
    if state.trusted:
        return Check("trust", OK, "trusted as it is now")
    what = "not trusted yet"
    if state.changed:
        changes = changes_since_trusted(state.config, state.files, state.texts)
        what = f"changed since you trusted it ({describe(changes, state.config.parent)})"
    return Check("trust", WARN, f"{what}: its tools run once you trust it (`nami trust`; `nami run` asks on a "
                                "terminal)")


def _api_key_check(effective: Effective) -> Check:
    source = effective.api_key_source
    if effective.api_key and source.startswith("$"):
        return Check("api key", OK, f"{mask(effective.api_key)} from {source}")
    if effective.api_key:
        return Check("api key", OK, source)
    wanted = effective.model.api_key_env or "NAMI_API_KEY"
    return Check("api key", FAIL, f"not set: export {wanted}=... (the endpoint is {effective.model.base_url})")


def program_check(registry: Registry, *, env: Mapping[str, str], workspace: Path) -> Check:
    """Every executable the tools start, found here: a name on PATH, or a path (relative to the workspace)."""
    users: dict[str, list[str]] = {}
    for tool in registry:
        if tool.builtin:
            continue
        for program in executables(tool):
            users.setdefault(program, []).append(tool.name)
    if not users:
        return Check("programs", OK, "no tool of agent.yaml starts a program")
    missing = [program for program in users if not _executable(program, env, workspace)]
    if not missing:
        return Check("programs", OK, f"all found: {', '.join(sorted(users))}")
    details = [f"{program}: needed by {', '.join(users[program])}" for program in missing]
    return Check("programs", FAIL, f"not found on PATH: {', '.join(missing)}", details)


def _executable(program: str, env: Mapping[str, str], workspace: Path) -> bool:
    if os.sep in program:
        target = Path(program) if os.path.isabs(program) else workspace / program
        return target.is_file() and os.access(target, os.X_OK)
    return shutil.which(program, path=env.get("PATH")) is not None


def ripgrep_check(env: Mapping[str, str]) -> Check:
    found = shutil.which("rg", path=env.get("PATH"))
    if found:
        return Check("ripgrep", OK, found)
    return Check("ripgrep", WARN, "rg is not on PATH: grep uses its slower Python engine (install ripgrep)")


def folder_check(env: Mapping[str, str]) -> Check:
    """nami's state folder (trust, saved tool output) and data folder (sessions) can be written."""
    folders = [default_state_dir(), user_data_dir(env)]
    problems = [problem for folder in folders if (problem := _not_writable(folder))]
    if problems:
        return Check("folders", FAIL, "cannot write: " + "; ".join(problems))
    return Check("folders", OK, ", ".join(_home_relative(f) + ("" if f.exists() else " (created on first use)")
                                          for f in folders))


def _home_relative(path: Path) -> str:
    home = Path.home()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _not_writable(folder: Path) -> str | None:
    """Why nami could not write in ``folder`` (creating it if need be), or None; leaves nothing behind."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if existing != folder:
        return None if os.access(existing, os.W_OK | os.X_OK) else f"{folder} (cannot create it in {existing})"
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        return f"{folder} ({exc.strerror or exc})"


def schema_copies_check(root: Path) -> Check | None:
    """The project's schema copies for editors match this nami's schemas (None: the project has none)."""
    copies = [file for file in schema_files(root) if file.path.exists()]
    if not copies:
        return None
    stale = []
    for file in copies:
        try:
            current = file.path.read_text(encoding="utf-8") == file.text
        except (OSError, UnicodeDecodeError):
            current = False
        if not current:
            stale.append(path_for_messages(file.path))
    if stale:
        return Check("schemas", WARN, f"{', '.join(stale)} differ from this nami's schemas: "
                                      "`nami init --schemas` refreshes them")
    return Check("schemas", OK, "the editors' copies in .nami/schemas are current")
