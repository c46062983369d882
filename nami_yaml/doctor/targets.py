"""``nami doctor --target NAME``: can calls run on this target here? Its env (the host variables it takes
are set, the absolute paths it names exist: a KUBECONFIG file, a folder on PATH) and the programs of the
tools that run on it, found on the PATH they will see. Nothing is run."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from nami_yaml.config.effective import Effective, protected_env_names
from nami_yaml.config.targets import project_targets
from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.env_secrets import is_secret_name, is_secret_value
from nami_yaml.registry.overview import executables
from nami_yaml.registry.registry import Registry
from nami_yaml.spec.validate import did_you_mean

_HOST_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def target_checks(effective: Effective, registry: Registry, name: str, *, env: Mapping[str, str],
                  workspace: Path) -> list[Check]:
    """The target's env, then its tools' programs."""
    targets = project_targets(effective)
    target = targets.get(name)
    label = f"target {name}"
    if target is None:
        names = targets.names()
        listed = f"targets: {', '.join(names)}" if names else "this project declares none (targets: in agent.yaml)"
        return [Check(label, FAIL, f"no target is named {name!r} ({listed}){did_you_mean(name, names)}")]
    return [_env_check(label, target.env, env, protected_env_names(effective)),
            _programs_check(label, registry, {**env, **_expanded(target.env, env)}, workspace)]


def _env_check(label: str, values: Mapping[str, str], host: Mapping[str, str], protected: frozenset[str]) -> Check:
    if not values:
        return Check(f"{label} env", OK, "sets no variables")
    failures: list[str] = []
    warnings: list[str] = []
    for key, value in values.items():
        if key in protected:
            failures.append(f"{key}: never given to tools (it may hold the model's API key)")
            continue
        for ref in _HOST_REF.findall(value):
            if ref not in host:
                failures.append(f"{key}: refers to ${{{ref}}}, which is not set here")
            elif is_secret_name(ref) or is_secret_value(host[ref]):
                warnings.append(f"{key}: ${{{ref}}} looks secret; a tool gets it only if it lists {ref} in "
                                "env_passthrough")
        expanded = _HOST_REF.sub(lambda m: host.get(m.group(1), ""), value)
        for part in expanded.split(os.pathsep):
            if os.path.isabs(part) and not os.path.exists(part):
                failures.append(f"{key}: {part} does not exist")
    shown = ", ".join(values)
    if failures:
        return Check(f"{label} env", FAIL, f"{len(failures)} problem{'s' if len(failures) != 1 else ''} in {shown}",
                     failures + warnings)
    if warnings:
        return Check(f"{label} env", WARN, shown, warnings)
    return Check(f"{label} env", OK, f"{shown}: every path named exists")


def _expanded(values: Mapping[str, str], host: Mapping[str, str]) -> dict[str, str]:
    return {key: _HOST_REF.sub(lambda m: host.get(m.group(1), ""), value) for key, value in values.items()}


def _programs_check(label: str, registry: Registry, env: Mapping[str, str], workspace: Path) -> Check:
    users: dict[str, list[str]] = {}
    for tool in registry:
        if tool.targeted:
            for program in executables(tool):
                users.setdefault(program, []).append(tool.name)
    if not users:
        return Check(f"{label} programs", WARN, "no tool runs on a target (target: true in a tool file)")
    missing = [program for program in users if not _found(program, env, workspace)]
    if missing:
        details = [f"{program}: needed by {', '.join(users[program])}" for program in missing]
        return Check(f"{label} programs", FAIL, f"not found on the PATH its calls get: {', '.join(missing)}", details)
    tools = sorted({name for names in users.values() for name in names})
    return Check(f"{label} programs", OK, f"{', '.join(sorted(users))} found, for {len(tools)} "
                                          f"tool{'s' if len(tools) != 1 else ''}")


def _found(program: str, env: Mapping[str, str], workspace: Path) -> bool:
    if os.sep in program:
        path = Path(program) if os.path.isabs(program) else workspace / program
        return path.is_file() and os.access(path, os.X_OK)
    return shutil.which(program, path=env.get("PATH")) is not None
