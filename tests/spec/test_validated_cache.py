"""Tool files found valid are kept between commands (spec/validated_cache.py): the next command builds their
tools without parsing or checking them, the same tools; anything else (a problem, a file changed or on
targets, a pack not the user's own or not of its shape) is parsed and checked as before, never an error.

Each "command" here is a fresh start of what one process keeps (the read files, the packs read)."""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import nami_yaml.spec.yamlpos as yamlpos
from nami_yaml.app.protected import protected_paths
from nami_yaml.config.settings import load_settings
from nami_yaml.paths import expand_tool_paths
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.loader import Host, check_tools
from nami_yaml.registry.tool import Tool
from nami_yaml.sensitive_paths import sensitive_reason
from nami_yaml.spec import validated_cache
from nami_yaml.xdg import user_cache_dir
from tests.helpers import write

TOOL = """\
name: {name}
description: Shows recent commits by an author.
risk: read
parameters:
  type: object
  properties:
    author: {{type: string}}
    count: {{type: integer, default: 20}}
  required: [author]
command: [git, log, "--max-count={{count}}", --author, "{{author}}"]
"""
MANY = """\
defaults: {risk: read, timeout: 30}
tools:
  - name: first
    description: First.
    command: [echo, one]
  - name: second
    description: Second.
    command: [echo, two]
"""


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each file's text was parsed, by file name."""
    counted: Counter[str] = Counter()
    real = yamlpos.parse_yaml

    def parse_yaml(text: str, file: str) -> Any:
        counted[Path(file).name] += 1
        return real(text, file)

    monkeypatch.setattr(yamlpos, "parse_yaml", parse_yaml)
    return counted


def command(folder: Path, host: Host | None = None) -> tuple[list[Tool], list[str]]:
    """The tools of ``folder`` and its problems as `nami check` prints them, as a new process loads them."""
    yamlpos._PARSED.clear()
    validated_cache.forget()
    tools, problems = check_tools(expand_tool_paths(str(folder), Path("/")), host=host)
    return tools, [str(problem) for problem in problems]


def packs() -> list[Path]:
    return sorted((user_cache_dir() / "tools").glob("*/*.json"))


def test_the_next_command_builds_the_same_tools_without_parsing_them(workdir: Path, parses: Counter[str]) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    write(workdir / "tools" / "more" / "many.yaml", MANY)
    first, problems = command(workdir / "tools")
    assert problems == [] and parses == {"log.yaml": 1, "many.yaml": 1}
    again, problems = command(workdir / "tools")
    assert problems == []
    assert again == first  # every field: definitions, runners, where each was declared
    assert [tool.source for tool in again] == ["tools/log.yaml:1:1", "tools/more/many.yaml:3:5",
                                               "tools/more/many.yaml:6:5"]
    assert parses == {"log.yaml": 1, "many.yaml": 1}  # not parsed again


def test_the_cache_is_the_users_alone(workdir: Path) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    command(workdir / "tools")
    [pack] = packs()
    assert stat.S_IMODE(pack.stat().st_mode) == 0o600
    for folder in (pack.parent, pack.parent.parent, user_cache_dir()):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not list(pack.parent.glob(".pack-*"))  # written whole: no temporary file left
    # The folder is protected as the trust store's is: a write there needs exec approval.
    protected = protected_paths(load_settings(ProjectRequest(env={}, cwd=workdir, user_config=False)))
    assert sensitive_reason(pack, protected) is not None


def test_a_file_with_a_warning_is_parsed_and_reported_by_every_command(workdir: Path,
                                                                        parses: Counter[str]) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log").replace("    count:", "    unused: {type: string}\n"
                                                                           "    count:"))
    _, first = command(workdir / "tools")
    _, again = command(workdir / "tools")
    assert first == again == ["tools/log.yaml:8:5: $.parameters.properties.unused: warning: parameter 'unused' is "
                              "never used by the command or stdin"]
    assert parses["log.yaml"] == 2


def test_the_checks_of_this_machine_are_made_again_on_a_kept_file(workdir: Path, parses: Counter[str]) -> None:
    """Kept by a run (no checks of the machine), then `nami check` where git is not on PATH: the warning,
    positioned, as without the cache."""
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    command(workdir / "tools")
    host = Host(workdir, str(workdir / "empty-bin"))
    _, problems = command(workdir / "tools", host)
    assert problems == ["tools/log.yaml:10:11: $.command[0]: warning: program 'git' is not found on PATH here (the "
                        "machine that runs the tool needs it)"]
    write(workdir / "bin" / "git", "#!/bin/sh\n").chmod(0o755)
    tools, problems = command(workdir / "tools", Host(workdir, str(workdir / "bin")))
    assert problems == [] and [tool.name for tool in tools] == ["log"]
    assert parses["log.yaml"] == 2  # the first load, and the check that found the warning


def test_a_docs_file_gone_since_is_reported(workdir: Path) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log") + "docs: log.md\n")
    write(workdir / "tools" / "log.md", "How to read the log.\n")
    tools, problems = command(workdir / "tools")
    assert problems == [] and tools[0].docs is not None
    (workdir / "tools" / "log.md").unlink()
    tools, problems = command(workdir / "tools")
    assert tools == [] and len(problems) == 1 and "docs file 'log.md' not found" in problems[0]
    assert problems[0].startswith("tools/log.yaml:11:7: $.docs: ")


def test_a_changed_file_is_checked_again(workdir: Path) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    command(workdir / "tools")
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log").replace("risk: read", "risk: reed"))
    tools, problems = command(workdir / "tools")
    assert tools == [] and len(problems) == 1 and problems[0].startswith("tools/log.yaml:3:7: $.risk: ")


def test_a_name_defined_twice_is_reported_with_both_places_from_kept_files(workdir: Path) -> None:
    write(workdir / "tools" / "a.yaml", TOOL.format(name="log"))
    write(workdir / "tools" / "b.yaml", "# the same name\n" + TOOL.format(name="log"))
    _, first = command(workdir / "tools")
    _, again = command(workdir / "tools")
    assert first == again == ["tools/b.yaml:2:7: $.name: duplicate tool name 'log': also defined at tools/a.yaml:1:7"]


def test_tools_on_targets_are_not_kept(workdir: Path, parses: Counter[str]) -> None:
    """What they are depends on the project's targets, which the key does not hold."""
    write(workdir / "tools" / "remote.yaml", "name: remote\ndescription: R.\nrisk: read\ntarget: optional\n"
                                             "command: [uptime]\n")
    command(workdir / "tools")
    command(workdir / "tools")
    assert parses["remote.yaml"] == 2


def test_a_value_json_would_change_is_not_kept(workdir: Path) -> None:
    """YAML gives dates (and bytes); JSON would give them back as something else."""
    import datetime

    file = workdir / "tools" / "t.yaml"
    validated_cache.remember(file, "d" * 64, {"name": "t", "when": datetime.date(2024, 1, 1)}, [(1, 1, 1, 7)])
    validated_cache.remember(file, "e" * 64, {"name": "t", "when": "2024-01-01"}, [(1, 1, 1, 7)])
    validated_cache.save()
    validated_cache.forget()
    assert validated_cache.lookup(file, "d" * 64) is None
    assert validated_cache.lookup(file, "e" * 64) == validated_cache.Validated({"name": "t", "when": "2024-01-01"},
                                                                             ((1, 1, 1, 7),))


def _garbage(pack: Path) -> None:
    pack.write_bytes(b"\x00{not json")


def _readable_by_others(pack: Path) -> None:
    pack.chmod(0o644)


def _other_code(pack: Path) -> None:
    data = json.loads(pack.read_text())
    pack.write_text(json.dumps({**data, "code": "0" * 32}))


def _other_folder(pack: Path) -> None:
    data = json.loads(pack.read_text())
    pack.write_text(json.dumps({**data, "folder": "/elsewhere"}))


def _places_of_another_shape(pack: Path) -> None:
    data = json.loads(pack.read_text())
    for entry in data["entries"].values():
        entry["places"] = [["1", 1, 1, 7]]
    pack.write_text(json.dumps(data))


def _places_of_another_file(pack: Path) -> None:
    data = json.loads(pack.read_text())
    for entry in data["entries"].values():
        entry["places"] = [[1, 1, 1, 7], [2, 1, 2, 7]]  # two tools, for a file of one
    pack.write_text(json.dumps(data))


def _a_link(pack: Path) -> None:
    elsewhere = pack.with_name("elsewhere.json")
    pack.rename(elsewhere)
    pack.symlink_to(elsewhere)


@pytest.mark.parametrize("spoil", [_garbage, _readable_by_others, _other_code, _other_folder,
                                   _places_of_another_shape, _places_of_another_file, _a_link])
def test_a_pack_not_the_users_own_or_of_another_shape_is_ignored(workdir: Path, parses: Counter[str],
                                                                 spoil: Any) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    first, _ = command(workdir / "tools")
    [pack] = packs()
    spoil(pack)
    again, problems = command(workdir / "tools")
    assert problems == [] and again == first
    assert parses["log.yaml"] == 2  # parsed and checked again, as without a cache
    if not pack.is_symlink():
        assert stat.S_IMODE(pack.stat().st_mode) == 0o600 or spoil is _readable_by_others


def test_a_cache_folder_open_to_others_is_not_used(workdir: Path, parses: Counter[str]) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    command(workdir / "tools")
    (user_cache_dir() / "tools").chmod(0o755)
    again, problems = command(workdir / "tools")
    assert problems == [] and [tool.name for tool in again] == ["log"]
    assert parses["log.yaml"] == 2


def test_an_unwritable_cache_loses_nothing_but_time(workdir: Path, parses: Counter[str]) -> None:
    write(workdir / "tools" / "log.yaml", TOOL.format(name="log"))
    write(user_cache_dir().parent / "nami", "a file where the folder would be\n")
    first, problems = command(workdir / "tools")
    again, _ = command(workdir / "tools")
    assert problems == [] and again == first and parses["log.yaml"] == 2
    assert not os.path.isdir(user_cache_dir())
