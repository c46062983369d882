"""From the effective config to a registry: built-ins by name, then tool files relative to agent.yaml."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nami_yaml.app.toolset import build_registry, builtin_catalog, tool_files
from nami_yaml.config.settings import DEFAULT_BUILTINS, load_settings
from nami_yaml.errors import SpecError
from nami_yaml.project_request import ProjectRequest
from tests.helpers import write


def settings(home: Path, cwd: Path):
    return load_settings(ProjectRequest(env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}, cwd=cwd))


def test_default_builtins_all_exist_and_load(temp_home: Path, workdir: Path) -> None:
    assert set(DEFAULT_BUILTINS) <= set(builtin_catalog())
    registry = build_registry(settings(temp_home, workdir))
    assert registry.names() == [*DEFAULT_BUILTINS, "tool_docs"]  # they have docs: their reader comes too
    assert all(tool.builtin for tool in registry)


def test_tool_files_are_relative_to_the_config_file(temp_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "agent.yaml", "tools:\n  builtin: [read_file]\n  files: [tools/]\n")
    write(project / "tools" / "b.yaml", "name: second\ndescription: d\ncommand: [echo]\n")
    write(project / "tools" / "a.yaml", "name: first\ndescription: d\ncommand: [echo]\n")
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    effective = settings(temp_home, nested)
    assert [p.name for p in tool_files(effective)] == ["a.yaml", "b.yaml"]
    registry = build_registry(effective)
    assert registry.names() == ["read_file", "tool_docs", "first", "second"]
    assert [t.builtin for t in registry] == [True, True, False, False]


def test_extra_tool_paths_are_relative_to_the_current_folder(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: []}\n")
    write(workdir / "more" / "x.yaml", "name: x\ndescription: d\ncommand: [echo]\n")
    effective = settings(temp_home, workdir)
    assert build_registry(effective, ["more"]).names() == ["x"]
    # the same file named twice is loaded once
    assert build_registry(effective, ["more", "more/x.yaml"]).names() == ["x"]
    with pytest.raises(SpecError, match="nothing.yaml:1:1: \\$: matches no tool file"):
        build_registry(effective, ["nothing.yaml"])


def test_unknown_builtin_name_is_reported_with_its_position(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  builtin: [read_file, raed_file]\n")
    with pytest.raises(SpecError) as info:
        build_registry(settings(temp_home, workdir))
    (problem,) = info.value.problems
    assert str(problem).startswith("agent.yaml:2:24: $.tools.builtin[1]: unknown built-in tool 'raed_file'; "
                                   "did you mean 'read_file'?; the built-in tools are bash, ")


def test_a_user_tool_may_not_reuse_a_builtin_name(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [bash], files: [mine.yaml]}\n")
    write(workdir / "mine.yaml", "name: bash\ndescription: d\ncommand: [echo]\n")
    with pytest.raises(SpecError) as info:
        build_registry(settings(temp_home, workdir))
    (problem,) = info.value.problems
    assert problem.file == "mine.yaml"
    assert problem.message.startswith("duplicate tool name 'bash': also defined at ")
    assert re.search(r"builtins/bash\.yaml:\d+:\d+$", problem.message)


def test_every_problem_of_every_tool_file_is_reported_together(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools]}\n")
    write(workdir / "tools" / "a.yaml", "name: a\ndescription: 5\ncommand: [echo]\n")
    write(workdir / "tools" / "b.yaml", "name: b\ndescription: d\n")
    with pytest.raises(SpecError) as info:
        build_registry(settings(temp_home, workdir))
    assert [str(p) for p in info.value.problems] == [
        "tools/a.yaml:2:14: $.description: expected string, got integer 5",
        "tools/b.yaml:1:1: $: missing runner: a tool needs one of command, pipeline, script or entrypoint",
    ]


def test_library_tools_are_selected_by_group_or_file_before_the_tool_files(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  builtin: [read_file]\n  library: [jq, git/status]\n  files: [mine.yaml]\n")
    write(workdir / "mine.yaml", "name: mine\ndescription: d\ncommand: [echo]\n")
    registry = build_registry(settings(temp_home, workdir))
    assert registry.names() == ["read_file", "tool_docs", "jq_filter", "git_status", "mine"]  # read_file has docs
    assert not registry.get("jq_filter").builtin


def test_an_unknown_library_name_is_reported_with_its_position(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  library: [git, kubctl]\n")
    with pytest.raises(SpecError) as info:
        build_registry(settings(temp_home, workdir))
    assert str(info.value).startswith("agent.yaml:2:18: $.tools.library[1]: unknown library group 'kubctl'; "
                                      "did you mean 'kubectl'?")


def test_a_library_name_must_look_like_one(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "tools:\n  library: [Git]\n")
    with pytest.raises(SpecError) as info:
        settings(temp_home, workdir)
    assert [p.message for p in info.value.problems] == [
        '"Git" must be a library group such as git, or group/file such as kubectl/logs']


def test_the_user_configs_library_joins_the_projects(temp_home: Path, workdir: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml", "tools: {library: [jq, git/status]}\n")
    write(workdir / "agent.yaml", "tools: {builtin: [], library: [git/status, git/log]}\n")
    registry = build_registry(settings(temp_home, workdir))
    # tool_docs comes with tools that have docs on demand, as every library tool does
    # (and load_tools: together they weigh enough to be sent on demand)
    assert registry.names() == ["tool_docs", "load_tools", "jq_filter", "git_status", "git_log"]
    assert registry.groups() == {"jq": ["jq_filter"], "git": ["git_status", "git_log"]}
    write(temp_home / ".config" / "nami" / "config.yaml", "tools:\n  library: [jq, gti]\n")
    with pytest.raises(SpecError) as info:
        build_registry(settings(temp_home, workdir))
    assert str(info.value).startswith(f"{os.path.relpath(temp_home / '.config' / 'nami' / 'config.yaml')}:2:17: "
                                      "$.tools.library[1]: unknown library group 'gti'; did you mean 'git'?")
