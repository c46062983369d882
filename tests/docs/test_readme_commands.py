"""The README's console examples that can run here print what the README says: `nami init` (in a project
that uses git, kubectl and terraform, with docker and jq also on PATH), and the offline recipe (the fake server, `nami run` and `nami doctor`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nami_yaml.cli import init as init_module
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import fake_programs, nami, programs_on_path, run_nami, write

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
        # jq on the PATH (doctor checks the library's programs), as on the README's machine
        environment = {"NAMI_BASE_URL": url, "PATH": programs_on_path(workdir.parent / "bin", "jq")}
        doctor = run_nami(None, "doctor", cwd=workdir, env=environment)  # passes before trust, as $NAMI_BASE_URL
        assert nami("trust", "--yes").exit_code == 0  # chose the endpoint, not agent.yaml
        ran = run_nami(None, "run", "hello", cwd=workdir, env=environment)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert doctor.returncode == 0, doctor.stdout
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == console_after('NAMI_BASE_URL=http://127.0.0.1:8765/v1 nami run "hello"')


def test_the_install_command_names_extras_that_exist() -> None:
    """`nami mcp serve` works after the README's install: the command installs the mcp extra, and the extras
    it names are the ones pyproject.toml declares. (Its shape, and a real run: test_readme_install.py.)"""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Install and run\n\n```bash\n(.*?)```", readme, re.S)
    assert block is not None
    extras = re.search(r"pip install -e '\.\[([a-z,]+)\]'", block.group(1))
    assert extras is not None, block.group(1)
    # tomllib is Python 3.11+; nami supports 3.10, so the section is read as text
    section = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[1]
    section = section.split("\n[")[0]
    declared = dict(re.findall(r"^([a-z]+) = \[(.*)\]", section, re.M))
    assert set(extras.group(1).split(",")) <= set(declared)
    assert "mcp" in extras.group(1).split(",") and declared["mcp"].startswith('"mcp')


def test_the_options_said_for_run_and_chat_are_theirs() -> None:
    """Each option the README lists for `run` and `chat` is in both commands' --help."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("`run` and `chat` take", 1)[1].split("\n\n", 1)[0]
    names = [span.split()[0] for span in re.findall(r"`(-[^`]*)`", paragraph)]
    assert len(names) >= 12
    for command in ("run", "chat"):
        shown = nami(command, "--help").output
        assert [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}\b", shown)] == [], command


def test_the_run_example_shows_each_call_as_the_argv_it_runs(workdir: Path, tmp_path: Path,
                                                            fake_openai: FakeOpenAIServer) -> None:
    """`→` lines in the README's `nami run` example are what nami prints for those calls of the kubectl
    library tools: the command line each runs (not the tool's name and arguments)."""
    example = console_after('nami run "The web deployment in shop is slow')
    shown = [line for line in example if line.startswith("→ ")]
    assert len(shown) == 3
    write(workdir / "agent.yaml", "tools: {library: [kubectl]}\n")
    assert nami("trust", "--yes").exit_code == 0
    fake_programs(tmp_path / "bin", "kubectl")
    fake_openai.add(
        tool_calls(call("kubectl_get", {"kind": "pods", "namespace": "shop", "selector": "app=web"})),
        tool_calls(call("kubectl_logs", {"pod": "deployment/web", "namespace": "shop", "since": "3h"})),
        tool_calls(call("kubectl_rollout_restart", {"name": "web", "namespace": "shop"})),
        text("I restarted the deployment."),
    )
    ran = run_nami(fake_openai, "run", "--yes", "why is web slow?", cwd=workdir,
                   env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert [line for line in ran.stderr.splitlines() if line.startswith("→ ")] == shown


def test_the_first_tool_checks_and_dry_runs_as_the_readme_shows(workdir: Path) -> None:
    """"Write your first tool": its two YAML blocks, then `nami check` (the count of built-ins included) and
    the dry run print what the README shows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Write your first tool\n", 1)[1].split("\n## ", 1)[0]
    tool, agent = re.findall(r"^```yaml\n(.*?)^```", section, re.S | re.M)[:2]
    write(workdir / "tools" / "disk_free.yaml", tool)
    write(workdir / "agent.yaml", agent)
    (line,) = console_after("nami check")
    checked = nami("check")
    assert checked.exit_code == 0, checked.output
    assert checked.output.strip() == line.replace("/home/ann/project", str(workdir))
    assert nami("trust", "--yes").exit_code == 0
    shown = console_after("nami tools call disk_free path=/ --dry-run")
    assert shown[-1] == "..."
    dry = nami("tools", "call", "disk_free", "path=/", "--dry-run")
    assert dry.output.splitlines()[:len(shown) - 1] == shown[:-1]


def test_the_doctor_example_counts_the_tools_nami_init_adds(workdir: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's `nami doctor` runs in the project its `nami init` made (git, kubectl, terraform on PATH):
    the tools it says load are the ones `nami check` counts there."""
    (said,) = [line for line in console_after("nami doctor") if line.startswith("OK    tools ")]
    monkeypatch.setenv("PATH", fake_programs(tmp_path / "bin", "git", "kubectl", "terraform", "wc"))
    # The README's shop-infra: a repository with a manifest and terraform, so init adds those three groups.
    (workdir / ".git").mkdir()
    write(workdir / "deploy" / "web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    write(workdir / "infra" / "main.tf", "terraform {}\n")
    assert nami("init", "--yes").exit_code == 0
    checked = nami("check")
    count = re.search(r"; (\d+) tools \(", checked.output)
    assert count is not None, checked.output
    assert said.split() == ["OK", "tools", count.group(1), "tools", "load"]
