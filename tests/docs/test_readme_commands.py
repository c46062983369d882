"""The README's console examples that can run here print what the README says: `nami init` (in a project
that uses git, kubectl and terraform, with docker and jq also on PATH), and the offline recipe (the fake server, `nami run` and `nami doctor`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nami_yaml.cli import init as init_module
from tests.helpers import fake_programs, nami, run_nami

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)


def console_after(command: str) -> list[str]:
    """The lines the README shows after ``$ command``, up to the next command or the end of its block."""
    for block in CONSOLE.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        lines = block.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith(f"$ {command}")]
        if starts:
            rest = lines[starts[0] + 1:]
            end = next((i for i, line in enumerate(rest) if line.startswith("$ ")), len(rest))
            return rest[:end]
    raise AssertionError(f"the README shows no `$ {command}`")


def test_nami_init_prints_what_the_readme_shows(workdir: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_programs(tmp_path / "bin", "git", "kubectl", "terraform", "docker", "jq"))
    (workdir / ".git").mkdir()  # what the project uses: git, kubectl, terraform (docker and jq only on PATH)
    (workdir / "deploy").mkdir()
    (workdir / "deploy" / "web.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    (workdir / "infra").mkdir()
    (workdir / "infra" / "main.tf").write_text("terraform {}\n")
    before = {p for p in workdir.rglob("*") if p.is_file()}
    monkeypatch.setattr(init_module, "can_ask", lambda: True)  # a person answers: y
    result = nami("init", input="y\n")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == console_after("nami init")
    assert sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*") if p.is_file() and p not in before) == sorted(
        line.removeprefix("created ") for line in console_after("nami init") if line.startswith("created "))


def test_the_offline_recipe_answers_as_the_readme_shows(workdir: Path) -> None:
    assert nami("init", "--library", "jq").exit_code == 0  # a fresh project, not trusted yet
    assert console_after("python -P -m nami_yaml.testing --port 8765 &") == ["http://127.0.0.1:8765/v1"]
    # The README's command, on a free port: the same server, printing its address first.
    server = subprocess.Popen([sys.executable, "-P", "-m", "nami_yaml.testing", "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", url)
        environment = {"NAMI_BASE_URL": url}
        doctor = run_nami(None, "doctor", cwd=workdir, env=environment)  # passes before trust, as $NAMI_BASE_URL
        assert nami("trust", "--yes").exit_code == 0  # chose the endpoint, not agent.yaml
        ran = run_nami(None, "run", "hello", cwd=workdir, env=environment)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert doctor.returncode == 0, doctor.stdout
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == console_after('NAMI_BASE_URL=http://127.0.0.1:8765/v1 nami run "hello"')


def test_the_install_line_is_one_line_and_names_extras_that_exist() -> None:
    """`nami mcp serve` works after the README's install: the line installs the mcp extra, and the extras it
    names are the ones pyproject.toml declares."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Install and run\n\n```bash\n(.*?)```", readme, re.S)
    assert block is not None
    (line,) = block.group(1).splitlines()
    extras = re.search(r"pip install -e '\.\[([a-z,]+)\]'", line)
    assert extras is not None, line
    # tomllib is Python 3.11+; nami supports 3.10, so the section is read as text
    section = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[1]
    section = section.split("\n[")[0]
    declared = dict(re.findall(r"^([a-z]+) = \[(.*)\]", section, re.M))
    assert set(extras.group(1).split(",")) <= set(declared)
    assert "mcp" in extras.group(1).split(",") and declared["mcp"].startswith('"mcp')
