"""`nami init`: a project that `nami check` accepts, library groups for the CLIs on PATH (asked, or --yes),
never an overwrite; `--tool NAME` adds one tool; `--schemas` refreshes the editors' copies."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from nami_yaml.cli import init as init_module
from nami_yaml.registry.library import library_catalog
from tests.helpers import fake_programs, nami


@pytest.fixture
def only_git_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_programs(tmp_path / "bin", "git"))


def library_of(folder: Path) -> list[str]:
    return yaml.safe_load((folder / "agent.yaml").read_text())["tools"]["library"]


def test_init_with_yes_adds_the_groups_found_and_the_project_checks(workdir: Path, only_git_on_path: None) -> None:
    (workdir / ".git").mkdir()
    result = nami("init", "--yes")
    assert result.exit_code == 0, result.output
    assert "created agent.yaml" in result.output and "created tools/count_lines.yaml" in result.output
    assert "nami doctor" in result.output
    assert library_of(workdir) == ["git"]
    # git's 6 tools wait for load_tools: the 8 built-ins, tool_docs, load_tools and the example go up front
    assert ("tools: 17; the model gets 11 definitions up front, load_tools among them; the library groups git "
            "(6 tools) load when it asks") in result.output
    checked = nami("check")
    assert checked.exit_code == 0, checked.output
    # 8 built-ins and tool_docs; git's 6 and the example
    assert "17 tools (10 built-in, 7 command) from 7 tool files" in checked.output  # load_tools: git on demand


def test_init_asks_on_a_terminal(workdir: Path, only_git_on_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / ".git").mkdir()
    monkeypatch.setattr(init_module, "can_ask", lambda: True)
    result = nami("init", input="n\n")
    assert "Found on PATH and used here: git (.git). Add nami's library tools for them to agent.yaml? [Y/n]" in result.output
    assert result.exit_code == 0 and library_of(workdir) == []
    assert "tools: 10, all sent to the model up front" in result.output


def test_init_adds_only_the_groups_the_project_uses_and_names_the_rest(workdir: Path, every_program_on_path: list[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41: nine CLIs on PATH added 47 tools. Only what the project plainly uses is offered."""
    (workdir / "charts" / "web" / "templates").mkdir(parents=True)
    (workdir / "charts" / "web" / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (workdir / "infra").mkdir()
    (workdir / "infra" / "main.tf").write_text('terraform {}\n')
    (workdir / "deploy").mkdir()
    (workdir / "deploy" / "app.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n")
    (workdir / "node_modules" / "x").mkdir(parents=True)
    (workdir / "node_modules" / "x" / "Dockerfile").write_text("FROM scratch\n")  # a dependency's: not the project's
    monkeypatch.setattr(init_module, "can_ask", lambda: True)
    result = nami("init", input="y\n")
    assert result.exit_code == 0, result.output
    assert ("Found on PATH and used here: helm (charts/web/Chart.yaml), kubectl (deploy/app.yaml), terraform "
            "(infra/main.tf). Add nami's library tools for them to agent.yaml? [Y/n]: y") in result.output
    assert library_of(workdir) == ["helm", "kubectl", "terraform"]
    assert ("also on PATH, not used here, not added: docker, git, http, jq, system, systemd (add any to "
            "tools.library in agent.yaml; `nami tools library` lists them)") in result.output


def test_init_without_a_terminal_adds_no_library_and_says_so(workdir: Path, only_git_on_path: None) -> None:
    (workdir / ".git").mkdir()
    result = nami("init")
    assert result.exit_code == 0
    assert "not adding library tools for git (no terminal to ask; --yes adds them)" in result.output
    assert library_of(workdir) == []


def test_init_in_a_project_that_uses_none_of_them_asks_nothing(workdir: Path, only_git_on_path: None) -> None:
    result = nami("init", "--yes")
    assert result.exit_code == 0 and library_of(workdir) == []
    assert "[Y/n]" not in result.output
    assert "also on PATH, not used here, not added: git (add any" in result.output


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


@pytest.fixture
def every_program_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A PATH with the programs of every library group (stubs) and of the example tools (the real ones);
    returns the groups."""
    folder = tmp_path / "programs"
    folder.mkdir()
    catalog, problems = library_catalog()
    assert problems == []
    for program in {program for group in catalog for program in group.programs}:
        (folder / program).write_text("#!/bin/sh\n")
        (folder / program).chmod(0o755)
    for program in ("wc", "echo"):
        real = shutil.which(program)
        assert real is not None
        (folder / program).unlink(missing_ok=True)
        (folder / program).symlink_to(real)
    monkeypatch.setenv("PATH", str(folder))
    return [group.name for group in catalog]


@pytest.mark.parametrize("with_library", [False, True])
def test_every_file_init_writes_loads_without_a_problem_or_a_warning(workdir: Path, every_program_on_path: list[str],
                                                                    with_library: bool) -> None:
    groups = every_program_on_path if with_library else []
    created = nami("init", *(f"--library={group}" for group in groups))
    assert created.exit_code == 0, created.output
    assert nami("init", "--tool", "deploy_web").exit_code == 0
    assert library_of(workdir) == groups
    checked = nami("check", "--strict")
    assert (checked.exit_code, checked.stderr) == (0, ""), checked.output
    report = json.loads(nami("check", "--json").stdout)
    assert (report["errors"], report["warnings"]) == (0, 0)
    tool = yaml.safe_load((workdir / "tools" / "count_lines.yaml").read_text())
    assert tool["parameters"]["properties"]["paths"]["description"] == "Files, relative to the workspace."
    schemas = sorted((workdir / ".nami" / "schemas").iterdir())
    assert [p.name for p in schemas] == ["agent.schema.json", "tasks.schema.json", "tool.schema.json"]
    for schema in schemas:
        Draft202012Validator.check_schema(json.loads(schema.read_text()))


def _contents(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("linked", [".nami", ".nami/schemas", "tools"])
def test_init_refuses_to_write_through_a_symlinked_folder(linked: str, workdir: Path, tmp_path: Path) -> None:
    """A repository whose `.nami` is a link to ~/.config (say) made `nami init` write there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / linked).parent.mkdir(parents=True, exist_ok=True)
    (workdir / linked).symlink_to(outside, target_is_directory=True)
    before = _contents(workdir)
    result = nami("init", "--library", "git")
    assert result.exit_code == 1
    assert f"{workdir / linked} is a symbolic link" in result.output and "nothing was written" in result.output
    assert list(outside.iterdir()) == [] and _contents(workdir) == before


def test_init_tool_and_schemas_refuse_a_symlinked_folder_too(workdir: Path, tmp_path: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {files: [tools]}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "tools").symlink_to(outside, target_is_directory=True)
    assert nami("init", "--tool", "deploy").exit_code == 1
    (workdir / "tools").unlink()
    (workdir / ".nami").symlink_to(outside, target_is_directory=True)
    result = nami("init", "--schemas")
    assert result.exit_code == 1 and "is a symbolic link" in result.output
    assert list(outside.iterdir()) == []


def test_init_refuses_a_schema_copy_that_is_a_link(workdir: Path, tmp_path: Path) -> None:
    target = tmp_path / "victim.json"
    target.write_text("mine\n")
    (workdir / ".nami" / "schemas").mkdir(parents=True)
    (workdir / ".nami" / "schemas" / "agent.schema.json").symlink_to(target)
    result = nami("init", "--schemas")
    assert result.exit_code == 1 and "is a symbolic link" in result.output
    assert target.read_text() == "mine\n"


def test_init_refuses_a_symlinked_folder_even_when_its_copies_would_be_kept(workdir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "schemas").mkdir(parents=True)
    for name in ("agent", "tool", "tasks"):
        (outside / "schemas" / f"{name}.schema.json").write_text("{}\n")
    (workdir / ".nami").symlink_to(outside, target_is_directory=True)
    result = nami("init", "--library", "git")
    assert result.exit_code == 1 and "is a symbolic link" in result.output
    assert not (workdir / "agent.yaml").exists()
