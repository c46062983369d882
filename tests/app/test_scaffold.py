"""The files `nami init` writes: valid as written, pointing editors at schema copies that exist, and written
whole or not at all, never over an existing file."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from nami_yaml.app import scaffold
from nami_yaml.app.scaffold import (
    ScaffoldError,
    create_files,
    project_files,
    refresh_schemas,
    schema_files,
    tool_file,
)
from nami_yaml.registry.loader import check_tools
from nami_yaml.spec.validate import problems_for, schema_text, validator
from nami_yaml.spec.yamlpos import parse_yaml

MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)\n")


def written(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_new_project_is_valid_and_its_modelines_point_at_the_schema_copies(tmp_path: Path) -> None:
    create_files(project_files(tmp_path, ["git", "kubectl/logs"]), root=tmp_path)
    assert written(tmp_path) == [".nami/schemas/agent.schema.json", ".nami/schemas/tasks.schema.json",
                                 ".nami/schemas/tool.schema.json", "agent.yaml", "tools/count_lines.yaml"]
    for file, name in ((tmp_path / "agent.yaml", "agent"), (tmp_path / "tools" / "count_lines.yaml", "tool")):
        match = MODELINE.match(file.read_text(encoding="utf-8"))
        assert match, file
        assert (file.parent / match.group(1)).resolve().read_text(encoding="utf-8") == schema_text(name)
    agent = (tmp_path / "agent.yaml").read_text(encoding="utf-8")
    doc, problems = parse_yaml(agent, "agent.yaml")
    assert doc is not None and problems == []
    assert problems_for(doc, doc.value, (), validator("agent")) == []
    assert doc.value["tools"]["library"] == ["git", "kubectl/logs"]
    assert doc.value["model"] == {"provider": "deepseek", "name": "deepseek-chat", "temperature": 0.2}
    tools, problems = check_tools([tmp_path / "tools" / "count_lines.yaml"])
    assert problems == [] and tools[0].name == "count_lines"


def test_the_commented_ollama_section_is_valid_once_uncommented(tmp_path: Path) -> None:
    text = scaffold.agent_text(tmp_path, [])
    commented = re.search(r"^# model:\n(?:#   .*\n)+", text, re.M)
    assert commented is not None
    ollama = "\n".join(line[2:] for line in commented.group(0).splitlines())
    doc, _ = parse_yaml(ollama, "ollama")
    assert doc is not None and doc.value["model"]["provider"] == "ollama"
    assert problems_for(doc, doc.value, (), validator("agent")) == []


def test_a_new_tool_file_is_valid(tmp_path: Path) -> None:
    create_files([tool_file(tmp_path, "deploy-web")], root=tmp_path)
    tools, problems = check_tools([tmp_path / "tools" / "deploy-web.yaml"])
    assert problems == [] and tools[0].name == "deploy-web" and tools[0].risk == "read"
    with pytest.raises(ScaffoldError, match="is not a tool name"):
        tool_file(tmp_path, "deploy web")


def test_nothing_is_overwritten_and_nothing_is_written_when_one_file_exists(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("mine\n")
    with pytest.raises(ScaffoldError, match="agent.yaml already exists; nothing was written"):
        create_files(project_files(tmp_path, []), root=tmp_path)
    assert written(tmp_path) == ["agent.yaml"]
    assert (tmp_path / "agent.yaml").read_text() == "mine\n"


def test_a_file_appearing_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    file = tool_file(tmp_path, "x")
    file.path.parent.mkdir()
    file.path.write_text("theirs\n")
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold._write(file, replace=False)
    assert file.path.read_text() == "theirs\n"
    assert written(tmp_path) == ["tools/x.yaml"]  # no temporary file left behind


def test_a_failure_midway_leaves_no_file_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_link = os.link
    calls = []

    def failing_link(source: str, target: str) -> None:
        calls.append(target)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_link(source, target)

    monkeypatch.setattr(scaffold.os, "link", failing_link)
    with pytest.raises(ScaffoldError, match="No space left on device"):
        create_files(project_files(tmp_path, []), root=tmp_path)
    assert written(tmp_path) == []


def test_without_hard_links_the_name_is_still_claimed_exclusively(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(source: str, target: str) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(scaffold.os, "link", no_links)
    file = tool_file(tmp_path, "x")
    create_files([file], root=tmp_path)
    assert file.path.read_text(encoding="utf-8") == file.text
    with pytest.raises(ScaffoldError, match="already exists"):
        scaffold._write(file, replace=False)
    assert written(tmp_path) == ["tools/x.yaml"]


def test_refreshing_the_schema_copies_rewrites_only_stale_ones(tmp_path: Path) -> None:
    create_files(schema_files(tmp_path), root=tmp_path)
    stale = tmp_path / ".nami" / "schemas" / "tool.schema.json"
    stale.write_text("{}")
    assert refresh_schemas(tmp_path) == [stale]
    assert stale.read_text(encoding="utf-8") == schema_text("tool")
    assert refresh_schemas(tmp_path) == []
