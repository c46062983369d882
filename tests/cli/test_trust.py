"""A found project agent.yaml runs nothing until trusted, and asks again when its files change."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nami_yaml.cli.main import cli


def nami(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture
def project(workdir: Path) -> Path:
    (workdir / "tools").mkdir()
    (workdir / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, hi]\n")
    (workdir / "tools" / "helper.py").write_text("VALUE = 1\n")
    (workdir / "agent.yaml").write_text("tools:\n  files: [tools/]\npermissions: {exec: allow}\n")
    return workdir


def test_untrusted_project_runs_nothing(project: Path) -> None:
    result = nami("tools", "call", "hi")
    assert result.exit_code == 2
    assert "is not trusted yet" in result.output and "nami trust" in result.output
    for safe in (["tools", "list"], ["check"], ["config"], ["tools", "call", "hi", "--dry-run"]):
        assert nami(*safe).exit_code == 0, safe


def test_trust_then_any_change_asks_again(project: Path) -> None:
    trusted = nami("trust", "--yes")
    assert trusted.exit_code == 0
    assert "sets permissions.exec = \"allow\"" in trusted.output
    assert "hi (exec, command) from tools/hi.yaml:1:1" in trusted.output
    assert nami("tools", "call", "hi").output == "hi\n"
    (project / "tools" / "helper.py").write_text("VALUE = 2  # entry-point code changed\n")
    changed = nami("tools", "call", "hi")
    assert changed.exit_code == 2 and "changed since you trusted it" in changed.output
    assert nami("trust", "--yes").exit_code == 0
    (project / "tools" / "hi.yaml").write_text("name: hi\ndescription: Say hi.\ncommand: [echo, bye]\n")
    assert nami("tools", "call", "hi").exit_code == 2


def test_trust_without_yes_asks(project: Path) -> None:
    refused = CliRunner().invoke(cli, ["trust"], input="n\n")
    assert refused.exit_code == 1
    assert nami("tools", "call", "hi").exit_code == 2
    accepted = CliRunner().invoke(cli, ["trust"], input="y\n")
    assert accepted.exit_code == 0 and nami("tools", "call", "hi").exit_code == 0


def test_a_config_named_explicitly_needs_no_trust(project: Path) -> None:
    assert nami("tools", "call", "hi", env={"NAMI_CONFIG": str(project / "agent.yaml")}).output == "hi\n"
    assert nami("tools", "call", "hi", "--config", "agent.yaml").output == "hi\n"


def test_summary_flags_paths_outside_the_project(project: Path, tmp_path: Path) -> None:
    (project / "agent.yaml").write_text(f"workspace: {tmp_path}\nmodel:\n  base_url: https://llm.example.com/v1\n")
    result = nami("trust", "--yes")
    assert f"sets workspace = {tmp_path}   <- OUTSIDE the project folder" in result.output
    assert 'sets model.base_url = "https://llm.example.com/v1"' in result.output
