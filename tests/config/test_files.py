"""Finding and reading agent.yaml: discovery order, positioned problems, paths relative to the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.config.files import find_config, read_config, user_config_path
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.xdg import xdg_folder
from tests.helpers import write


def test_discovery_order(tmp_path: Path) -> None:
    explicit = write(tmp_path / "explicit.yaml", "{}\n")
    from_env = write(tmp_path / "env.yaml", "{}\n")
    project = write(tmp_path / "project" / "agent.yaml", "{}\n")
    nested = project.parent / "src" / "deep"
    nested.mkdir(parents=True)
    env = {"NAMI_CONFIG": str(from_env)}
    assert find_config(str(explicit), env, nested) == (explicit.resolve(), "--config")
    assert find_config(None, env, nested) == (from_env.resolve(), "NAMI_CONFIG")
    assert find_config(None, {}, nested) == (project, "found from the current folder")
    assert find_config(None, {"NAMI_CONFIG": ""}, nested)[0] == project
    assert find_config(None, {}, tmp_path) == (None, "none found")


def test_named_config_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--config names .*missing.yaml, which is not a file"):
        find_config(str(tmp_path / "missing.yaml"), {}, tmp_path)
    with pytest.raises(ConfigError, match="NAMI_CONFIG names"):
        find_config(None, {"NAMI_CONFIG": str(tmp_path)}, tmp_path)


def test_user_config_path() -> None:
    assert user_config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/nami/config.yaml")
    assert user_config_path({"HOME": "/home/u"}) == Path("/home/u/.config/nami/config.yaml")


def test_relative_xdg_and_home_values_are_ignored() -> None:
    """The XDG spec: relative values are invalid. Taken as is, the current folder (a cloned repository)
    would choose nami's user config and trust store."""
    assert user_config_path({"XDG_CONFIG_HOME": "cfg", "HOME": "/home/u"}) == Path("/home/u/.config/nami/config.yaml")
    assert user_config_path({"XDG_CONFIG_HOME": "", "HOME": "/home/u"}) == Path("/home/u/.config/nami/config.yaml")
    from_passwd = user_config_path({"HOME": "."})
    assert from_passwd.is_absolute() and from_passwd == xdg_folder("XDG_CONFIG_HOME", ".config", {}) / "nami" / "config.yaml"


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        read_config(path)
    return [str(p) for p in info.value.problems]


def test_bad_yaml_is_reported_with_file_line_col(workdir: Path) -> None:
    path = write(workdir / "agent.yaml", "model:\n  name: x\n  bad: [1, 2\n")
    (line,) = problems(path)
    assert line.startswith("agent.yaml:4:1: $: YAML syntax error: the list opened with '[' at line 3, column 8 is "
                           "not closed")


def test_schema_problems_are_all_reported_with_positions(workdir: Path) -> None:
    path = write(workdir / "agent.yaml", "modle: {name: x}\nlimits:\n  max_steps: many\npermissions: {exec: yes}\n")
    assert problems(path) == [
        "agent.yaml:1:1: $.modle: unknown key 'modle'; did you mean 'model'?",
        "agent.yaml:3:14: $.limits.max_steps: expected integer, got string \"many\"",
        "agent.yaml:4:21: $.permissions.exec: true is not one of: \"allow\", \"ask\", \"deny\"",
    ]


def test_not_a_mapping(workdir: Path) -> None:
    assert problems(write(workdir / "agent.yaml", "- model\n")) == [
        "agent.yaml:1:1: $: agent.yaml must be a mapping, found list"
    ]


def test_empty_file_is_an_empty_config(workdir: Path) -> None:
    assert read_config(write(workdir / "agent.yaml", "# nothing yet\n")).data == {}


def test_system_and_system_file_together_are_refused(workdir: Path) -> None:
    write(workdir / "prompt.md", "be brief")
    path = write(workdir / "agent.yaml", "system: hi\nsystem_file: prompt.md\n")
    assert problems(path) == ["agent.yaml:2:1: $.system_file: give either system or system_file, not both"]


def test_paths_are_relative_to_the_config_file(tmp_path: Path, workdir: Path) -> None:
    project = tmp_path / "project"
    write(project / "prompts" / "system.md", "be brief")
    write(project / "tools" / "a.yaml", "name: a\ndescription: d\ncommand: [echo]\n")
    (project / "ws").mkdir()
    absolute = project / "tools" / "a.yaml"
    path = write(project / "agent.yaml", f"system_file: prompts/system.md\nworkspace: ws\n"
                                         f"tools: {{files: [tools, '{absolute}']}}\n")
    data = read_config(path).data  # read from elsewhere: workdir is the current folder
    assert data["system_file"] == str(project / "prompts" / "system.md")
    assert data["workspace"] == str(project / "ws")
    assert data["tools"]["files"] == [str(project / "tools"), str(project / "tools" / "a.yaml")]


def test_missing_system_file_and_tool_files_are_problems(tmp_path: Path) -> None:
    project = tmp_path / "project"
    path = write(project / "agent.yaml", "system_file: nope.md\ntools:\n  files: [tools/, '*.tool.yaml']\n")
    lines = problems(path)
    assert len(lines) == 3
    assert lines[0].endswith(f"1:14: $.system_file: cannot read {project / 'nope.md'}: No such file or directory")
    assert lines[1].endswith(f"3:11: $.tools.files[0]: 'tools/' matches no tool file (relative to {project})")
    assert lines[2].endswith(f"3:19: $.tools.files[1]: '*.tool.yaml' matches no tool file (relative to {project})")


def test_a_schema_key_for_editors_is_not_a_setting(tmp_path: Path) -> None:
    config = read_config(write(tmp_path / "agent.yaml", "$schema: .nami/schemas/agent.schema.json\nsystem: hi\n"))
    assert config.data == {"system": "hi"}
