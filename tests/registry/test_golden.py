"""Golden error reports: each folder under golden/ holds broken tool files and the exact problems.

The loader runs with the case folder as the current directory, so the file names in ``expected.txt``
are relative to it; warnings are included. A case with a ``bin/`` folder is also checked against that
machine: ``bin/`` is the whole PATH and the case folder the workspace. ``NAMI_UPDATE_GOLDEN=1`` rewrites
the expected files (review the diff after).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nami_yaml.errors import SpecError
from nami_yaml.registry.loader import Host, check_tools, load_tools

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def report(case: Path) -> str:
    files = sorted(p.relative_to(case) for p in case.iterdir() if p.suffix in (".yaml", ".yml"))
    host = Host(case.resolve(), str(case.resolve() / "bin")) if (case / "bin").is_dir() else None
    _, problems = check_tools(files, host=host)
    return "".join(f"{p}\n" for p in SpecError(problems).problems)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("name", CASES)
def test_golden_report(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = GOLDEN / name
    monkeypatch.chdir(case)
    actual = report(Path("."))
    expected_file = case / "expected.txt"
    if os.environ.get("NAMI_UPDATE_GOLDEN") == "1":
        expected_file.write_text(actual, encoding="utf-8")
    expected = expected_file.read_text(encoding="utf-8")
    assert expected.strip(), f"{name}: a golden case must be broken"
    assert actual == expected


def test_every_problem_of_a_file_is_reported_not_only_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOLDEN / "wrong_types")
    lines = report(Path(".")).splitlines()
    assert [line.split(": ")[1] for line in lines] == ["$.name", "$.description", "$.risk", "$.timeout"]


def test_duplicate_name_names_both_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOLDEN / "duplicate_name")
    (line,) = report(Path(".")).splitlines()
    assert line.startswith("b.yaml:") and "a.yaml:" in line
    # The first definition stays usable: only the second one is dropped.
    tools, _ = load_tools([Path("a.yaml"), Path("b.yaml")])
    assert [(t.name, t.description) for t in tools] == [("status", "Git status.")]
