"""Where tool files are found, and how paths are shown in messages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nami_yaml.paths import expand_tool_paths, path_for_messages
from tests.helpers import write


def test_expand_tool_paths(workdir: Path) -> None:
    for name in ("a.yaml", "sub/b.yml", "sub/deeper/c.yaml", ".hidden/d.yaml", "__pycache__/e.yaml", "notes.txt"):
        write(workdir / name, "x: 1\n")
    found = expand_tool_paths("", workdir)
    assert [p.relative_to(workdir).as_posix() for p in found] == ["a.yaml", "sub/b.yml", "sub/deeper/c.yaml"]
    assert expand_tool_paths("sub/b.yml", workdir) == [workdir / "sub/b.yml"]
    assert [p.name for p in expand_tool_paths("sub/**/*.y*ml", workdir)] == ["b.yml", "c.yaml"]
    assert [p.name for p in expand_tool_paths("*.yaml", workdir)] == ["a.yaml"]
    assert expand_tool_paths(str(workdir / "a.yaml"), Path("/nowhere")) == [workdir / "a.yaml"]
    assert expand_tool_paths("missing.yaml", workdir) == []


def test_paths_in_messages_are_relative_to_the_current_folder(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    assert path_for_messages(workdir / "tools" / "a.yaml") == os.path.join("tools", "a.yaml")
    assert path_for_messages(workdir.parent / "b.yaml") == os.path.join("..", "b.yaml")
