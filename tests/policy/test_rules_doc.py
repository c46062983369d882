"""docs/permissions.md's bash example decides as its table says: the rules shown, each command of the table."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision

DOC = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"
Decide = Callable[..., Decision]


def example() -> tuple[str, list[tuple[str, str]]]:
    """The rules of the section "Example: git, through bash" and its table's (command, decision) rows."""
    section = DOC.read_text(encoding="utf-8").split("## Example: git, through bash", 1)[1].split("\n## ", 1)[0]
    rules = section.split("```yaml\n", 1)[1].split("```", 1)[0].split("rules:\n", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or cells[0] in ("command", "---"):
            continue
        for double, single in re.findall(r"``\s(.+?)\s``|`([^`]+)`", cells[0]):
            rows.append(((double or single).replace("\\|", "|"), cells[1]))
    return rules, rows


def test_the_table_has_its_rows() -> None:
    assert len(example()[1]) >= 25


@pytest.mark.parametrize(("command", "decision"), example()[1])
def test_the_bash_example_decides_as_the_table_says(rules: Callable[[str], Decide], command: str,
                                                    decision: str) -> None:
    text = example()[0]
    if decision.startswith("allow if `echo`"):
        text = text.replace("command: [git status,", "command: [echo, git status,", 1)
        decision = "allow"
    assert rules(text)("bash", command=command).action == decision, command
