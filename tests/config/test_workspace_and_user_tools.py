"""The workspace is the project's folder wherever nami starts in it; the user config's tool files join the
project's; ``~`` and ``$VARS`` expand in paths."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from nami_yaml.config.prompt import system_prompt
from nami_yaml.config.settings import load_settings
from nami_yaml.config.toolset import build_registry
from nami_yaml.errors import SpecError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}


def test_the_workspace_defaults_to_the_folder_of_a_found_or_named_agent_yaml(temp_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "agent.yaml", "{}\n")
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    found = load_settings(env=env_for(temp_home), cwd=deep)
    assert found.get("workspace") == str(project)
    assert found.sources["workspace"] == "default: the folder of agent.yaml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = load_settings(config=str(project / "agent.yaml"), env=env_for(temp_home), cwd=elsewhere)
    assert named.get("workspace") == str(project)
    none = load_settings(env=env_for(temp_home), cwd=elsewhere)
    assert (none.get("workspace"), none.sources["workspace"]) == (str(elsewhere), "default: the current folder")
    write(project / "agent.yaml", "workspace: src\n")
    chosen = load_settings(env=env_for(temp_home), cwd=deep)
    assert (chosen.get("workspace"), chosen.sources["workspace"]) == (str(project / "src"), str(project / "agent.yaml"))


def test_the_prompt_names_the_current_folder_relative_to_the_workspace(temp_home: Path, tmp_path: Path) -> None:
    effective = load_settings(env=env_for(temp_home), cwd=tmp_path)
    day = datetime.date(2025, 1, 2)
    (tmp_path / "a" / "b").mkdir(parents=True)
    at_root = system_prompt(effective, tmp_path, day, cwd=tmp_path)
    assert at_root.endswith(f"Workspace: {tmp_path}\nToday's date: 2025-01-02")
    inside = system_prompt(effective, tmp_path, day, cwd=tmp_path / "a" / "b")
    assert inside.endswith(f"Workspace: {tmp_path}\nCurrent folder: a/b (relative to the workspace)\n"
                           "Today's date: 2025-01-02")
    assert system_prompt(effective, tmp_path, day, cwd=tmp_path / "a" / "b") == inside  # byte-stable
    outside = system_prompt(effective, tmp_path / "a", day, cwd=tmp_path)
    assert f"Current folder: {tmp_path} (outside the workspace)\n" in outside


def test_user_config_tool_files_join_the_projects(temp_home: Path, workdir: Path) -> None:
    team = temp_home / "team-tools"
    write(team / "logs.yaml", "name: team_logs\ndescription: d\ncommand: [echo]\n")
    user = write(temp_home / ".config" / "nami" / "config.yaml", "tools: {builtin: [], files: ['~/team-tools']}\n")
    project = write(workdir / "agent.yaml", "tools: {files: [tools/]}\n")
    write(workdir / "tools" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo]\n")
    effective = load_settings(env=env_for(temp_home), cwd=workdir)
    assert effective.get("tools.files") == [str(team), str(workdir / "tools")]
    assert effective.sources["tools.files"] == f"{user} + {project}"
    assert build_registry(effective).names() == ["team_logs", "deploy"]


def test_a_tool_name_in_both_is_an_error_naming_both_files(temp_home: Path, workdir: Path) -> None:
    write(temp_home / "lib" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo]\n")
    write(temp_home / ".config" / "nami" / "config.yaml", "tools: {builtin: [], files: ['$HOME/lib']}\n")
    write(workdir / "agent.yaml", "tools: {files: [tools/]}\n")
    write(workdir / "tools" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo, other]\n")
    with pytest.raises(SpecError) as failure:
        build_registry(load_settings(env=env_for(temp_home), cwd=workdir))
    (problem,) = failure.value.problems
    assert problem.file.endswith("tools/deploy.yaml")
    assert problem.message.startswith("duplicate tool name 'deploy': also defined at ")
    assert problem.message.endswith("home/lib/deploy.yaml:1:7")  # the user's library, shown relative


def test_variables_expand_in_paths_and_an_unset_one_is_named(temp_home: Path, workdir: Path) -> None:
    write(temp_home / "shared" / "t.yaml", "name: shared_tool\ndescription: d\ncommand: [echo]\n")
    write(workdir / "agent.yaml", "tools:\n  builtin: []\n  files: ['${TEAM}/t.yaml', $TEAM]\nworkspace: $WS\n")
    (workdir / "ws").mkdir()
    effective = load_settings(env=env_for(temp_home, TEAM=str(temp_home / "shared"), WS="ws"), cwd=workdir)
    assert effective.get("workspace") == str(workdir / "ws")
    assert build_registry(effective).names() == ["shared_tool"]
    with pytest.raises(SpecError) as failure:
        load_settings(env=env_for(temp_home, WS="ws"), cwd=workdir)
    assert [str(p) for p in failure.value.problems] == [
        "agent.yaml:3:11: $.tools.files[0]: $TEAM is not set (in '${TEAM}/t.yaml')",
        f"agent.yaml:3:11: $.tools.files[0]: '${{TEAM}}/t.yaml' matches no tool file (relative to {workdir})",
        "agent.yaml:3:29: $.tools.files[1]: $TEAM is not set (in '$TEAM')",
        f"agent.yaml:3:29: $.tools.files[1]: '$TEAM' matches no tool file (relative to {workdir})",
    ]
