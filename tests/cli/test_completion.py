"""Shell completion: the scripts, sub-commands, tool names (read fast, never failing), library names and
session ids; and no openai on the way."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.shell_completion import BashComplete
from click.testing import CliRunner

from nami_yaml.cli.completion import complete_session_ids, session_ids
from nami_yaml.cli.main import COMMANDS, cli


def complete(*words: str, incomplete: str = "") -> list[str]:
    return [item.value for item in BashComplete(cli, {}, "nami", "_NAMI_COMPLETE").get_completions(
        list(words), incomplete)]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_for_each_shell(shell: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell])
    assert result.exit_code == 0
    assert f"_NAMI_COMPLETE={shell}_complete" in result.output
    assert CliRunner().invoke(cli, ["completion", "tcsh"]).exit_code == 2


def test_sub_commands_and_their_options_complete() -> None:
    assert complete() == sorted(COMMANDS)
    assert complete(incomplete="do") == ["doctor"]
    assert complete("tools") == ["call", "library", "list", "show"]
    assert "--strict" in complete("check", incomplete="--")
    assert complete("schema") == ["tool", "agent", "tasks", "hook-input", "hook-output"]


def test_tool_names_come_from_the_project(workdir: Path) -> None:
    (workdir / "tools").mkdir()
    (workdir / "agent.yaml").write_text("tools: {builtin: [read_file, bash], library: [jq], files: [tools/]}\n")
    (workdir / "tools" / "deploy.yaml").write_text("name: deploy\ndescription: 5\ncommand: [x]\n")  # invalid, named
    (workdir / "tools" / "many.yaml").write_text("tools:\n  - {name: deploy_web}\n  - {name: dump}\n")
    (workdir / "tools" / "broken.yaml").write_text("name: [unclosed\n")
    assert complete("tools", "show") == ["read_file", "bash", "jq_filter", "deploy", "deploy_web", "dump"]
    assert complete("tools", "call", incomplete="dep") == ["deploy", "deploy_web"]


def test_a_broken_agent_yaml_completes_nothing_and_says_nothing(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {library: [nope]}\n")
    assert complete("tools", "show") == []
    (workdir / "agent.yaml").write_text("tools: [\n")
    assert complete("tools", "show") == []


def test_library_names_complete() -> None:
    assert complete("tools", "library", incomplete="k") == ["kubectl"]
    assert complete("init", "--library", incomplete="git/s") == ["git/show", "git/status"]


def test_session_ids_newest_first_from_the_sessions_folder(temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(temp_home / "data"))
    assert session_ids() == []  # no folder yet: nothing, and no error
    folder = temp_home / "data" / "nami" / "sessions"
    folder.mkdir(parents=True)
    now = time.time()
    for age, name in ((30, "20240501-101500-ab12.jsonl"), (10, "20240502-090000-cd34.jsonl"), (20, "s-folder"),
                      (5, ".hidden.jsonl"), (1, "notes.txt")):
        path = folder / name
        path.mkdir() if "." not in name else path.write_text("{}\n")
        os.utime(path, (now - age, now - age))
    assert session_ids() == ["20240502-090000-cd34", "s-folder", "20240501-101500-ab12"]

    @click.command()
    @click.option("--resume", shell_complete=complete_session_ids)
    def chat(resume: str | None) -> None:
        pass

    completed = BashComplete(chat, {}, "x", "_X_COMPLETE").get_completions(["--resume"], "2024")
    assert [item.value for item in completed] == ["20240502-090000-cd34", "20240501-101500-ab12"]


def test_completing_imports_no_openai(workdir: Path) -> None:
    (workdir / "agent.yaml").write_text("tools: {builtin: default, library: [git]}\n")
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            "try:\n    cli(prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "print('openai' in sys.modules, file=sys.stderr)")
    for words, cword in (("nami ", "1"), ("nami tools show ", "3"), ("nami run --", "2"), ("nami doctor --", "2")):
        env = {**os.environ, "_NAMI_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                                cwd=workdir)
        assert result.stderr.strip().endswith("False"), (words, result.stderr)
        assert result.stdout.strip(), words
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=workdir,
                           env={**os.environ, "_NAMI_COMPLETE": "bash_complete", "COMP_WORDS": "nami tools show g",
                                "COMP_CWORD": "3"})
    assert "plain,git_log" in shown.stdout.splitlines() and "plain,glob" in shown.stdout.splitlines()


def test_session_ids_complete_for_resume_and_the_sessions_commands(temp_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = temp_home / "data" / "nami" / "sessions"
    folder.mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(temp_home / "data"))
    for name in ("20240501-101500-ab12", "20240502-090000-cd34"):
        (folder / f"{name}.jsonl").write_text("{}\n")
    assert set(complete("chat", "--resume")) == {"20240501-101500-ab12", "20240502-090000-cd34"}
    assert complete("sessions", "show", incomplete="20240502") == ["20240502-090000-cd34"]
    assert complete("sessions", "export", incomplete="20240501") == ["20240501-101500-ab12"]
