"""`nami doctor`'s sandbox check: whether tool processes run sandboxed here, and if not why and how to get
it, with the project's settings (a required sandbox that is missing fails)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nami_yaml.doctor.result import FAIL, OK, WARN, Check
from nami_yaml.runners.sandbox.probe import availability
from nami_yaml.sandbox_settings import SandboxSettings


def sandbox_check(values: Mapping[str, Any] | None, env: Mapping[str, str]) -> Check:
    """``values``: the effective ``sandbox`` settings (None: the defaults)."""
    settings = SandboxSettings.from_mapping(values)
    found = availability(env)
    if settings.mode == "off":
        detail = [f"bubblewrap here: {found.describe()}"]
        return Check("sandbox", WARN, "off (sandbox.mode: off): tools' processes can read, write and reach "
                                      "whatever you can", detail)
    if found.available:
        network = "on" if settings.network else "off"
        return Check("sandbox", OK, f"{found.describe()}: tools' processes run sandboxed (mode {settings.mode}; "
                                    f"bash's network {network})")
    if settings.mode in ("required", "read-only"):
        return Check("sandbox", FAIL, f"required (sandbox.mode: {settings.mode}) and not available: {found.reason}; "
                                      "tools that start processes will not run", [f"to get it, {found.how}"])
    return Check("sandbox", WARN, f"not available, so tools run unsandboxed: {found.reason}",
                 [f"to get it, {found.how}"])
