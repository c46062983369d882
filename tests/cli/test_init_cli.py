"""`nami init`: a project that `nami check` accepts, library groups for the CLIs on PATH (asked, or --yes),
never an overwrite; `--tool NAME` adds one tool; `--schemas` refreshes the editors' copies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from nami_yaml.cli import init as init_module
from tests.helpers import fake_programs, nami


@pytest.fixture
def only_git_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_programs(tmp_path / "bin", "git"))


def library_of(folder: Path) -> list[str]:
    return yaml.safe_load((folder / "agent.yaml").read_text())["tools"]["library"]


def test_init_with_yes_adds_the_groups_found_and_the_project_checks(workdir: Path, only_git_on_path: None) -> None:
    result = nami("init", "--yes")
    assert result.exit_code == 0, result.output
    assert "created agent.yaml" in result.output and "created tools/count_lines.yaml" in result.output
    assert "nami doctor" in result.output
    assert library_of(workdir) == ["git"]
    checked = nami("check")
    assert checked.exit_code == 0, checked.output
    # 8 built-ins and tool_docs; git's 6 and the example
    assert "16 tools (9 built-in, 7 command) from 7 tool files" in checked.output


def test_init_asks_on_a_terminal(workdir: Path, only_git_on_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(init_module, "can_ask", lambda: True)
    result = nami("init", input="n\n")
    assert "Found on PATH: git. Add nami's library tools for them to agent.yaml? [Y/n]" in result.output
    assert result.exit_code == 0 and library_of(workdir) == []


def test_the_question_names_programs_not_library_groups(workdir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_programs(tmp_path / "bin", "curl", "jq"))
    monkeypatch.setattr(init_module, "can_ask", lambda: True)
    result = nami("init", input="y\n")
    assert ("Found on PATH: curl, jq. Add nami's library tools for them (the library groups http, jq) to "
            "agent.yaml? [Y/n]: y") in result.output
    assert library_of(workdir) == ["http", "jq"]


def test_init_without_a_terminal_adds_no_library_and_says_so(workdir: Path, only_git_on_path: None) -> None:
    result = nami("init")
    assert result.exit_code == 0
    assert "not adding library tools for git (no terminal to ask; --yes adds them)" in result.output
    assert library_of(workdir) == []


def test_init_with_named_groups(workdir: Path, only_git_on_path: None) -> None:
    assert nami("init", "--library", "kubectl/logs", "--library", "jq").exit_code == 0
    assert library_of(workdir) == ["kubectl/logs", "jq"]


def test_init_refuses_an_unknown_group_and_writes_nothing(workdir: Path) -> None:
    result = nami("init", "--library", "kubctl")
    assert result.exit_code == 2
    assert "unknown library group 'kubctl'; did you mean 'kubectl'?" in result.output
    assert list(workdir.iterdir()) == []


def test_init_never_overwrites(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("model: {name: mine}\n")
    result = nami("init", "--yes")
    assert result.exit_code == 1
    assert "agent.yaml already exists here; nothing was written" in result.output
    assert sorted(p.name for p in workdir.iterdir()) == ["agent.yaml"]
    (workdir / "agent.yaml").unlink()
    (workdir / "tools").mkdir()
    (workdir / "tools" / "count_lines.yaml").write_text("mine\n")
    refused = nami("init", "--yes")
    assert refused.exit_code == 1 and "count_lines.yaml already exists; nothing was written" in refused.output
    assert not (workdir / "agent.yaml").exists()


def test_init_keeps_schema_copies_already_there(workdir: Path) -> None:
    (workdir / ".nami" / "schemas").mkdir(parents=True)
    (workdir / ".nami" / "schemas" / "tool.schema.json").write_text("{}")
    result = nami("init")
    assert result.exit_code == 0, result.output
    assert "kept    .nami/schemas/tool.schema.json (`nami init --schemas` refreshes it)" in result.output
    refreshed = nami("init", "--schemas")
    assert refreshed.output == "wrote   .nami/schemas/tool.schema.json\n"
    assert nami("init", "--schemas").output == "the schemas in .nami/schemas are up to date\n"


def test_init_tool_adds_one_file_to_the_project_above(workdir: Path) -> None:
    assert nami("init").exit_code == 0
    (workdir / "src").mkdir()
    os.chdir(workdir / "src")
    result = nami("init", "--tool", "deploy_web")
    assert result.exit_code == 0, result.output
    assert "created ../tools/deploy_web.yaml" in result.output
    assert "does not load" not in result.output
    listed = nami("tools", "list")
    assert "deploy_web" in listed.output
    again = nami("init", "--tool", "deploy_web")
    assert again.exit_code == 1 and "already exists" in again.output
    assert nami("init", "--tool", "no spaces").exit_code == 2


def test_init_tool_in_a_project_that_does_not_load_tools_says_so(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {builtin: []}\n")
    result = nami("init", "--tool", "probe")
    assert result.exit_code == 0
    assert "created tools/probe.yaml" in result.output
    assert "created .nami/schemas/tool.schema.json" in result.output
    assert "agent.yaml does not load tools/probe.yaml yet: add tools/ to tools.files" in result.output
