"""The top-level command: lazy sub-commands, and a help screen that loads nothing heavy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import COMMANDS, cli


def test_every_listed_command_resolves_to_itself() -> None:
    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name
        assert command.help, name
    assert cli.get_command(context, "nope") is None


def test_help_lists_every_command_and_unknown_ones_fail() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name, (_, _, help_line) in COMMANDS.items():
        assert f"{name}  " in result.output and help_line in result.output
    assert CliRunner().invoke(cli, ["nope"]).exit_code == 2


def test_help_imports_neither_the_loader_nor_openai() -> None:
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            "try:\n    cli(['--help'], prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('jsonschema', 'yaml', 'openai', 'nami_yaml.registry.loader') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().endswith("[]"), result.stdout + result.stderr


@pytest.mark.parametrize("module", ["nami_yaml", "nami_yaml.testing"])
def test_python_dash_m_does_not_import_modules_planted_in_the_current_folder(tmp_path: Path, module: str) -> None:
    """`python -m` puts the current folder first on sys.path: a click.py or yaml.py in a cloned repository
    would run in place of the real package."""
    for planted in ("click", "yaml", "openai", "http"):
        (tmp_path / f"{planted}.py").write_text(
            f"import pathlib; pathlib.Path({str(tmp_path / ('ran-' + planted))!r}).write_text('x')\n"
            "raise SystemExit('planted module imported')\n")
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == []
    assert done.returncode == 0, done.stderr
