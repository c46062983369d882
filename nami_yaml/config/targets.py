"""agent.yaml's ``targets:`` and ``default_target:``: what is checked when the file is read, and the
project's targets as the plain value the registry and the runners take (``runtime.TargetSet``).

Targets, ``default_target`` and ``policy_tests`` belong to a project: they name its environments (its
kubeconfigs, contexts, workspaces) and the rules and tests written for them. The user config serves every
project, and a target from it would turn up in projects that never declared it (offered to their
``target: true`` tools, missing from their rules), so it is refused there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nami_yaml.config.effective import ConfigFile, Effective
from nami_yaml.errors import ConfigError, Problem
from nami_yaml.runtime import Target, TargetSet
from nami_yaml.spec.validate import did_you_mean
from nami_yaml.spec.yamlpos import Document

PROJECT_ONLY_KEYS = ("targets", "default_target", "policy_tests")


def text_value(value: Any) -> str:
    """A YAML scalar as the text a variable or an argument gets (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def expand_home(value: str, env: Mapping[str, str]) -> str:
    """A leading ``~`` (alone or before ``/``) is the home folder, as in other paths of agent.yaml. ``$NAME``
    is left alone: ``${NAME}`` in an env value is read from the host when a call runs, under the tool's rules
    for secrets, never here."""
    if value == "~" or value.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        return home + value[1:]
    return value


def prepare_targets(doc: Document, data: dict[str, Any], env: Mapping[str, str]) -> list[Problem]:
    """For ``read_config``: env values with ``~`` expanded, every value as text; ``default_target`` names a
    target."""
    targets = data.get("targets")
    problems: list[Problem] = []
    if isinstance(targets, dict):
        for spec in targets.values():
            spec["env"] = {k: expand_home(text_value(v), env) for k, v in (spec.get("env") or {}).items()}
            spec["vars"] = {k: text_value(v) for k, v in (spec.get("vars") or {}).items()}
    default = data.get("default_target")
    if default is not None:
        names = list(targets or {})
        if not names:
            problems.append(doc.problem(("default_target",), "default_target names a target, and there are no "
                                                              "targets: declare them under targets:", key=True))
        elif default not in names:
            problems.append(doc.problem(("default_target",), f"no target is named {default!r} (targets: "
                                                              f"{', '.join(names)}){did_you_mean(default, names)}"))
    return problems


def project_only_problems(config: ConfigFile) -> list[Problem]:
    """What the user config may not hold: targets, default_target, policy_tests."""
    return [config.doc.problem((key,), f"{key} belongs in a project's agent.yaml, not in the user config: "
                                       "it would apply to every project", key=True)
            for key in PROJECT_ONLY_KEYS if key in config.data]


def project_targets(effective: Effective, pinned: str | None = None) -> TargetSet:
    """The project's targets; ``pinned`` (``--target``) must name one of them (ConfigError otherwise)."""
    declared = effective.get("targets") or {}
    targets = tuple(Target(name, dict(spec.get("env") or {}), dict(spec.get("vars") or {}),
                           int((spec.get("approvals") or {}).get("required") or 1))
                    for name, spec in declared.items())
    names = [target.name for target in targets]
    if pinned is not None:
        if not names:
            where = effective.config_path or "no agent.yaml"
            raise ConfigError(f"cannot run on target {pinned!r}: this project declares no targets ({where}); "
                              "declare them under targets: in agent.yaml")
        if pinned not in names:
            raise ConfigError(f"cannot run on target {pinned!r}: no target is named so (targets: "
                              f"{', '.join(names)}){did_you_mean(pinned, names)}")
    return TargetSet(targets, effective.get("default_target"), pinned)
