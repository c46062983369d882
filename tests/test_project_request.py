"""ProjectRequest, the one shape of "which project", and the one opener that takes it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nami_yaml.app import ProjectRequest, open_project
from nami_yaml.app.project import as_request
from nami_yaml.config.settings import load_settings
from tests.helpers import write


def test_a_request_is_normalised_once_and_frozen(tmp_path: Path) -> None:
    request = ProjectRequest(config=tmp_path / "agent.yaml", cwd=str(tmp_path), tools=[Path("a.yaml")],  # type: ignore[arg-type]
                             flags={"model.name": "m", "model.base_url": None})
    assert request.config == str(tmp_path / "agent.yaml") and request.cwd == tmp_path
    assert request.tools == ("a.yaml",)
    assert request.flags == {"model.name": "m"}  # a flag not given says nothing
    assert request == ProjectRequest(config=str(tmp_path / "agent.yaml"), cwd=tmp_path, tools=("a.yaml",),
                                     flags={"model.name": "m"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.config = "other.yaml"  # type: ignore[misc]


def test_a_request_travels_as_json_without_the_environment(tmp_path: Path) -> None:
    request = ProjectRequest(config="agent.yaml", cwd=tmp_path, env={"SECRET": "x"}, tools=("tools",),
                             target="prod", agent="triage", flags={"limits.max_steps": 3}, discover=False)
    data = json.loads(json.dumps(request.to_json()))
    assert "SECRET" not in json.dumps(data)
    back = ProjectRequest.from_json(data)
    assert back == request.but(env=None)
    assert request.with_flags({"model.name": "m"}).flags == {"limits.max_steps": 3, "model.name": "m"}


def test_the_older_keywords_build_the_same_request(tmp_path: Path) -> None:
    request = as_request("agent.yaml", {"cwd": tmp_path, "extra_tools": ["t.yaml"], "flags": {"a.b": 1},
                                        "target": "prod", "discover": False})
    assert request == ProjectRequest(config="agent.yaml", cwd=tmp_path, tools=("t.yaml",), flags={"a.b": 1},
                                     target="prod", discover=False)
    with pytest.raises(TypeError, match="not both"):
        as_request(request, {"cwd": tmp_path})
    with pytest.raises(TypeError, match="unexpected keywords tool"):
        as_request(None, {"tool": "x"})


def test_open_project_reads_the_request_it_is_given(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "limits: {max_steps: 7}\ntools: {builtin: [list_dir]}\n")
    request = ProjectRequest(config=str(tmp_path / "agent.yaml"), cwd=tmp_path, env={},
                             flags={"limits.max_output": 1234}, user_config=False)
    with open_project(request) as project:
        assert project.settings.get("limits.max_steps") == 7
        assert project.context.settings.max_output == 1234  # a flag is above every file
        assert "list_dir" in [tool.name for tool in project.registry] and "grep" not in project.registry
        assert project.cwd == tmp_path
    # The older spelling opens the same project.
    with open_project(str(tmp_path / "agent.yaml"), cwd=tmp_path, env={}, flags={"limits.max_output": 1234}) as same:
        assert same.context.settings.max_output == 1234


def test_what_a_project_loads_is_listed_once_per_settings_value(tmp_path: Path) -> None:
    from nami_yaml.config.loaded import loaded_files
    from nami_yaml.config.trust import trust_state

    write(tmp_path / "agent.yaml", "tools: {files: [tools/]}\n")
    write(tmp_path / "tools" / "a.yaml", "name: a\ndescription: a\ncommand: [echo, hi]\n")
    effective = load_settings(ProjectRequest(cwd=tmp_path, env={}, user_config=False))
    assert loaded_files(effective) is loaded_files(effective)
    before = trust_state(effective)
    write(tmp_path / "tools" / "b.yaml", "name: b\ndescription: b\ncommand: [echo, hi]\n")
    assert trust_state(effective).digest == before.digest  # computed once for this value
    assert trust_state(effective, fresh=True).digest != before.digest  # the deliberate re-read sees b.yaml
