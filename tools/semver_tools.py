"""The Python side of tools/semver.yaml: a plain function, called with the validated arguments."""

from __future__ import annotations

import re

from nami_yaml.errors import ToolError

_VERSION = re.compile(r"^(v?)(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def bump(version: str, part: str = "patch") -> str:
    match = _VERSION.match(version.strip())
    if not match:
        raise ToolError(f"{version!r} is not a semantic version like 1.4.2")
    prefix, major, minor, patch = match.group(1), *map(int, match.groups()[1:4])
    if part == "major":
        major, minor, patch = major + 1, 0, 0
    elif part == "minor":
        minor, patch = minor + 1, 0
    else:
        patch += 1
    return f"{prefix}{major}.{minor}.{patch}"
