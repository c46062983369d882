"""A newcomer's most common mistake, a YAML syntax error in agent.yaml or in the user config, gets the same
clear `file:line:col` report from every command: never a traceback (`nami check` crashed on it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import nami, write

COMMANDS = [["check"], ["check", "--json"], ["config"], ["tools", "list"], ["context"], ["agents"], ["trust"],
            ["run", "hi"], ["log"], ["policy", "test"]]
BROKEN = {
    "one space of indentation": ("model:\n  name: x\n   base_url: y\n", 3),
    "an unclosed [": ("tools: {builtin: [read_file}\n", 1),
}


def reported_at(output: str, command: list[str], file: str, line: int) -> bool:
    """Whether the output names the problem at ``file:line`` (as a line of text, or in --json's list)."""
    if "--json" in command:
        problems = json.loads(output)["problems"]
        return any(p["file"].endswith(file) and p["line"] == line for p in problems)
    return f"{file}:{line}:" in output


@pytest.mark.parametrize("mistake", sorted(BROKEN))
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_broken_agent_yaml_is_reported_by_every_command(workdir: Path, temp_home: Path, command: list[str],
                                                          mistake: str) -> None:
    text, where = BROKEN[mistake]
    write(workdir / "agent.yaml", text)
    result = nami(*command)  # a bug's exception would be raised here, as is
    assert result.exit_code != 0
    assert reported_at(result.output, command, "agent.yaml", where), result.output
    assert "syntax error" in result.output or "not closed" in result.output


@pytest.mark.parametrize("command", [["check"], ["check", "--json"], ["config"], ["tools", "list"]], ids=" ".join)
def test_a_broken_user_config_is_reported_by_every_command(workdir: Path, temp_home: Path,
                                                           command: list[str]) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml", "limits: [max_steps: 3\n")
    write(workdir / "agent.yaml", "tools: {builtin: [read_file]}\n")
    result = nami(*command)
    assert result.exit_code != 0
    assert reported_at(result.output, command, "config.yaml", 2), result.output  # where the list should close
