"""The ops tool library: how agent.yaml names select its files, what `nami tools library` is built from, and
the rules every library file keeps (one tool, an explicit risk, `nami check --strict` clean)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from nami_yaml.cli.main import cli
from nami_yaml.registry.library import (
    LIBRARY_ROOT,
    UnknownLibraryName,
    library_catalog,
    library_groups,
    resolve_library,
    selectors,
)
from tests.library.conftest import LIBRARY_PROGRAMS, Stubs

GROUPS = ["docker", "git", "helm", "http", "jq", "kubectl", "system", "systemd", "terraform"]


def test_groups_and_their_files() -> None:
    groups = library_groups()
    assert list(groups) == GROUPS
    assert [f.stem for f in groups["git"]] == ["blame", "branch", "diff", "log", "show", "status"]
    assert "kubectl/logs" in selectors() and "kubectl" in selectors()
    assert not any(f.stem == "delete" for f in groups["kubectl"])  # on purpose: see docs/cookbook.md


@pytest.mark.parametrize("file", [f for files in library_groups().values() for f in files],
                         ids=lambda f: f"{f.parent.name}/{f.name}")
def test_every_file_is_one_tool_named_after_its_group_with_an_explicit_risk(file: Path) -> None:
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    assert isinstance(data, dict) and "tools" not in data  # one tool per file: a `docs:` line is one more key
    assert data["name"].startswith(file.parent.name + "_")
    assert data["risk"] in ("read", "write", "exec")
    assert file.read_text(encoding="utf-8").startswith("# Library tool: `tools: {library: [")


def test_resolve_groups_and_single_files_in_order_each_once() -> None:
    files = resolve_library(["jq", "kubectl/logs", "kubectl", "jq/filter"])
    relative = [f"{f.parent.name}/{f.stem}" for f in files]
    assert relative[0] == "jq/filter" and relative[1] == "kubectl/logs"
    assert len(relative) == len(set(relative)) == 1 + len(library_groups()["kubectl"])


@pytest.mark.parametrize(("name", "message"), [
    ("kubctl", "unknown library group 'kubctl'; did you mean 'kubectl'?; the library has: docker, git,"),
    ("kubectl/delete", "the library group 'kubectl' has no tool file 'delete'"),
    ("git/lgo", "has no tool file 'lgo'; did you mean 'log'?"),
])
def test_unknown_names(name: str, message: str) -> None:
    with pytest.raises(UnknownLibraryName) as info:
        resolve_library(["git", name])
    assert message in str(info.value)
    assert info.value.name == name


def test_catalog_says_which_programs_are_missing(tmp_path: Path) -> None:
    stubs = Stubs(tmp_path / "bin")
    for program in ("git", "bash"):
        stubs.add(program)
    catalog, problems = library_catalog(search_path=str(stubs.folder))
    assert problems == []
    by_name = {group.name: group for group in catalog}
    assert by_name["git"].programs == ["git"] and by_name["git"].available
    assert by_name["kubectl"].missing == ["kubectl"]
    assert by_name["system"].programs == ["df", "bash"] and by_name["system"].missing == ["df"]
    assert sum(len(group.tools) for group in catalog) == len(selectors()) - len(GROUPS)


def test_an_empty_or_missing_library_folder_has_no_groups(tmp_path: Path) -> None:
    assert library_groups(tmp_path / "none") == {}
    (tmp_path / "lib" / "empty").mkdir(parents=True)
    assert library_groups(tmp_path / "lib") == {}


def test_nami_check_strict_passes_on_the_whole_library(tmp_path: Path, workdir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    stubs = Stubs(tmp_path / "bin")
    for program in LIBRARY_PROGRAMS:
        stubs.add(program)
    monkeypatch.setenv("PATH", f"{stubs.folder}{os.pathsep}{os.environ['PATH']}")
    (workdir / "agent.yaml").write_text("tools: {builtin: []}\n")
    result = CliRunner().invoke(cli, ["check", "--strict", str(LIBRARY_ROOT)])
    assert result.exit_code == 0, result.output
    # every library tool, and the tool_docs built-in that reads their docs
    # Every library tool, tool_docs (they all have docs) and load_tools (the groups are sent on demand).
    assert f"{len(selectors()) - len(GROUPS) + 2} tools (2 built-in" in result.output


def test_the_package_data_globs_ship_every_library_file() -> None:
    pyproject = (LIBRARY_ROOT.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    patterns = re.search(r'^"nami_yaml" = \[(.*)\]$', pyproject, re.M)
    assert patterns is not None
    package = LIBRARY_ROOT.parent
    shipped = {path for pattern in re.findall(r'"([^"]+)"', patterns.group(1)) for path in package.glob(pattern)}
    assert {file for files in library_groups().values() for file in files} <= shipped
