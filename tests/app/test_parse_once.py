"""Each tool file is read and parsed once per command: the listing trust covers, the code its tools run,
the protected paths and the loader all share the one parse (a project of 1,000 tool files parsed each
three to five times)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import nami_yaml.spec.yamlpos as yamlpos
from nami_yaml.app import open_project
from nami_yaml.app.checking import check_project
from nami_yaml.project_request import ProjectRequest
from tests.helpers import write

TOOL = "name: {name}\ndescription: d\nrisk: read\ncommand: [./scripts/{name}.sh]\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each file's text was parsed (by file name as reported)."""
    counted: Counter[str] = Counter()

    class Counted(yamlpos.Document):  # every parse makes one Document (whichever module asked for it)
        def __init__(self, file: str, *args: Any, **keywords: Any) -> None:
            counted[Path(file).name] += 1
            super().__init__(file, *args, **keywords)

    monkeypatch.setattr(yamlpos, "Document", Counted)
    monkeypatch.setattr(yamlpos, "_PARSED", {}, raising=False)  # nothing kept from an earlier test
    return counted


def project(folder: Path) -> Path:
    config = write(folder / "agent.yaml", "sandbox: {mode: off}\ntools: {builtin: [read_file], files: [tools/]}\n")
    for name in ("one", "two", "three"):
        write(folder / "tools" / f"{name}.yaml", TOOL.format(name=name))
        write(folder / "scripts" / f"{name}.sh", "#!/bin/sh\necho ok\n").chmod(0o755)
    return config


def test_opening_a_project_parses_each_tool_file_once(temp_home: Path, workdir: Path,
                                                      parses: Counter[str]) -> None:
    config = project(workdir)
    opened = open_project(ProjectRequest(config=str(config), cwd=workdir))
    assert {"one", "two", "three"} <= set(opened.registry.names())
    assert {name: parses[name] for name in ("one.yaml", "two.yaml", "three.yaml")} == dict.fromkeys(
        ("one.yaml", "two.yaml", "three.yaml"), 1)


def test_nami_check_parses_each_tool_file_once(temp_home: Path, workdir: Path, parses: Counter[str]) -> None:
    config = project(workdir)
    report = check_project(str(config))
    assert not report.problems
    assert [parses[name] for name in ("one.yaml", "two.yaml", "three.yaml")] == [1, 1, 1]


def test_a_tool_file_changed_since_it_was_parsed_is_read_again(temp_home: Path, workdir: Path,
                                                               parses: Counter[str]) -> None:
    config = project(workdir)
    open_project(ProjectRequest(config=str(config), cwd=workdir))
    write(workdir / "tools" / "one.yaml", TOOL.format(name="one").replace("name: one", "name: one_renamed"))
    opened = open_project(ProjectRequest(config=str(config), cwd=workdir))
    assert "one_renamed" in opened.registry.names() and "one" not in opened.registry.names()
    assert parses["one.yaml"] == 2
