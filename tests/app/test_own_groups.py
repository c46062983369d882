"""A project's own tools sent on demand past ``tools.files_on_demand``: grouped by folder (or a tool's
``group:``), offered in load_tools' catalogue one line a group, like library groups; below it, all sent."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.app.toolset import build_registry
from nami_yaml.config.settings import load_settings
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.groups import LOADER
from tests.helpers import write

TOOL = "name: {name}\ndescription: Shows item {name}.\nrisk: read\ncommand: [echo, {name}]\n"


def registry(home: Path, cwd: Path, tools: str):
    write(cwd / "agent.yaml", f"tools:\n  builtin: [read_file]\n  files: [tools/]\n{tools}")
    for n in range(30):
        write(cwd / "tools" / f"t{n:02}.yaml", TOOL.format(name=f"item_{n:02}"))
    write(cwd / "tools" / "k8s" / "pods.yaml", TOOL.format(name="pods") + "group: cluster\n")
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return build_registry(load_settings(ProjectRequest(env=env, cwd=cwd)))


def sent(registry) -> list[str]:  # type: ignore[no-untyped-def]
    return [d["function"]["name"] for d in registry.definitions()]


def test_below_the_threshold_every_own_tool_is_sent_as_before(temp_home: Path, workdir: Path) -> None:
    found = registry(temp_home, workdir, "")  # 31 small tools: under the default 20,000 characters
    assert {"item_00", "item_29", "pods"} <= set(sent(found))
    assert LOADER not in found and found.on_demand == frozenset()
    assert all(tool.group is None for tool in found)  # a group: key counts only past the threshold


def test_past_the_threshold_own_tools_wait_in_groups_named_in_one_line(temp_home: Path, workdir: Path) -> None:
    found = registry(temp_home, workdir, "  files_on_demand: 1000\n")
    assert found.on_demand == {"tools/", "cluster"}
    assert sent(found) == ["read_file", "tool_docs", LOADER]
    loader = next(d for d in found.definitions() if d["function"]["name"] == LOADER)["function"]
    assert "tools/: 30 tools: item_00, item_01, item_02, …" in loader["description"]  # not 30 names
    assert "cluster: pods" in loader["description"]
    assert {"item_00", "item_29", "pods"} <= set(found.names())  # still in the registry: rules see them all
    assert "item_00" in [d["function"]["name"] for d in found.definitions(loaded=["tools/"])]


def test_eager_names_an_own_group_sent_from_the_start(temp_home: Path, workdir: Path) -> None:
    found = registry(temp_home, workdir, "  files_on_demand: 1000\n  eager: [cluster]\n")
    assert found.on_demand == {"tools/"}
    assert "pods" in sent(found) and "item_00" not in sent(found)


def test_files_on_demand_false_or_on_demand_false_sends_them_all(temp_home: Path, workdir: Path) -> None:
    for setting in ("  files_on_demand: false\n", "  files_on_demand: 0\n  on_demand: false\n"):
        found = registry(temp_home, workdir, setting)
        assert found.on_demand == frozenset() and "item_29" in sent(found), setting
