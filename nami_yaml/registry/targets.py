"""Tools that run on a target (``target: true`` or ``optional`` in the tool file): the ``target`` parameter
they get, and what the loader checks about them against the project's targets.

The registry is told the project's targets as a plain value (``runtime.TargetSet``) when it is built; it
reads no configuration. A targeted tool's ``target`` is an enum of the target names, so the model chooses
among them and its schema says which there are; with ``default_target`` it is optional, with that default;
pinned (``nami run --target``), it is left out of the schema and every call runs on the pinned target.
"""

from __future__ import annotations

from typing import Any

from nami_yaml.runtime import TargetSet

TARGET_PARAMETER = "target"
TRUE, OPTIONAL = "true", "optional"


def target_mode(raw: dict[str, Any]) -> str | None:
    """``true``, ``optional`` or None (the tool runs on no target), from the tool file's ``target:``."""
    value = raw.get("target")
    return TRUE if value is True else OPTIONAL if value == OPTIONAL else None


def target_parameter(targets: TargetSet) -> dict[str, Any]:
    """The schema of ``target``, as the model sees it."""
    names = targets.names()
    described = "Where this runs: one of the project's targets"
    schema: dict[str, Any] = {"type": "string", "enum": names}
    if targets.default is not None:
        schema["default"] = targets.default
        described += f" (default: {targets.default})"
    schema["description"] = described + "."
    return schema


def with_target_parameter(parameters: dict[str, Any], targets: TargetSet) -> dict[str, Any]:
    """``parameters`` with ``target`` added (required unless there is a default), or unchanged when the
    target is pinned: the model is then not offered the choice."""
    if targets.pinned is not None:
        return parameters
    properties = {**(parameters.get("properties") or {}), TARGET_PARAMETER: target_parameter(targets)}
    required = list(parameters.get("required") or [])
    if targets.default is None and TARGET_PARAMETER not in required:
        required.append(TARGET_PARAMETER)
    return {**parameters, "properties": properties, **({"required": required} if required else {})}
