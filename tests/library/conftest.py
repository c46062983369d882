"""Running library tools for real: the loader and executor the agent uses, with stub programs on PATH that
record the argv (and stdin, cwd, environment) they were started with."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.registry.executor import Executor
from nami_yaml.registry.library import library_groups
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext, Target, TargetSet
from nami_yaml.sandbox_settings import SandboxSettings

PLAN_FILE_PATH = re.compile(r"/[^\s=]*/nami-plan-[0-9a-f]+/plan")
SEALED_PLAN = re.compile(r"^/dev/fd/[0-9]+$")  # the sealed copy of the plan file the show step and the tool read

STUB = """#!{python}
import json, os, sys, urllib.request
stdin = sys.stdin.read() if sys.stdin is not None else None
record = {{"program": os.path.basename(sys.argv[0]), "argv": sys.argv[1:], "stdin": stdin, "cwd": os.getcwd(),
          "env": dict(os.environ), "peek": {{}}, "reached": None}}
# What the program could see and reach in its sandbox: the files named in STUB_PEEK, the URL in STUB_CONNECT.
for path in filter(None, os.environ.get("STUB_PEEK", "").split(os.pathsep)):
    try:
        record["peek"][path] = open(os.path.expanduser(path)).read()
    except OSError as exc:
        record["peek"][path] = None
if os.environ.get("STUB_CONNECT"):
    try:
        record["reached"] = urllib.request.urlopen(os.environ["STUB_CONNECT"], timeout=5).status == 200
    except OSError:
        record["reached"] = False
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps(record) + "\\n")
# As terraform plan -out=FILE does: a plan file (a tool's plan step, runners/plan_step.py, needs one).
for arg in sys.argv[1:]:
    if arg.startswith("-out="):
        with open(arg[len("-out="):], "w", encoding="utf-8") as plan:
            plan.write("stub plan\\n")
sys.stdout.write({stdout!r})
sys.exit({exit_code})
"""


@dataclass
class Call:
    program: str
    argv: list[str]
    stdin: str | None
    cwd: str
    env: dict[str, str]
    peek: dict[str, str | None]
    reached: bool | None

    @property
    def command(self) -> list[str]:
        return [self.program, *self.argv]


class Stubs:
    """Executables in one folder, put first on PATH; each records every start in a shared log."""

    def __init__(self, folder: Path):
        self.folder = folder
        # Beside the stubs, not among them: the tools run sandboxed, and only this folder is made writable.
        self.log_folder = folder.parent / f"{folder.name}-calls"
        self.log = self.log_folder / "calls.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        self.log_folder.mkdir(exist_ok=True)

    def add(self, program: str, *, stdout: str = "", exit_code: int = 0) -> None:
        path = self.folder / program
        path.write_text(STUB.format(python=sys.executable, log=str(self.log), stdout=stdout, exit_code=exit_code))
        path.chmod(0o755)

    def sandbox(self) -> SandboxSettings:
        """The sandbox settings of a run over these stubs: the defaults, and their log writable."""
        return SandboxSettings(writable=(str(self.log_folder),))

    def calls(self) -> list[Call]:
        if not self.log.exists():
            return []
        return [Call(**json.loads(line)) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def commands(self) -> list[list[str]]:
        """Every command started, the call's plan file written ``{plan_file}`` (its path is new each call), its
        sealed copy ``{sealed plan_file}`` (runners/plan_step.py)."""
        return [[SEALED_PLAN.sub("{sealed plan_file}", PLAN_FILE_PATH.sub("{plan_file}", part)) for part in call.command]
                for call in self.calls()]

    def only_call(self) -> Call:
        calls = self.calls()
        assert len(calls) == 1, [c.command for c in calls]
        return calls[0]

    def clear(self) -> None:
        self.log.unlink(missing_ok=True)


def all_library_tools(targets: TargetSet | None = None) -> Registry:
    files = [file for files in library_groups().values() for file in files]
    tools, problems = load_tools(files, targets=targets)
    assert problems == []
    return Registry(tools)


LIBRARY_PROGRAMS = ("git", "kubectl", "docker", "systemctl", "journalctl", "terraform", "helm", "jq", "curl",
                    "df", "du", "ps")


@pytest.fixture
def stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stubs:
    """Every program the library starts, stubbed, first on PATH (bash, sort, sed and awk stay real)."""
    made = Stubs(tmp_path / "stub-bin")
    for program in LIBRARY_PROGRAMS:
        made.add(program)
    monkeypatch.setenv("PATH", f"{made.folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return made


class LibraryRunner:
    """Calls library tools by name through the executor, as the agent would."""

    def __init__(self, ctx: RuntimeContext, targets: TargetSet | None = None):
        self.executor = Executor(all_library_tools(targets), ctx)

    def __call__(self, tool: str, /, **arguments: Any) -> ToolResult:
        assert tool in self.executor.registry, tool
        return self.executor.execute(tool, json.dumps(arguments))


@pytest.fixture
def library(workdir: Path, temp_home: Path, stubs: Stubs) -> LibraryRunner:
    """The library over stubs. The context is built after PATH changed, so tools see the stubs. The tools
    run sandboxed as the library declares them; the stubs' log is the one writable path the tests add."""
    ctx = RuntimeContext(workspace=workdir, host_env=dict(os.environ),
                         spill_dir=temp_home / ".local" / "state" / "nami" / "output",
                         sandbox=stubs.sandbox())
    return LibraryRunner(ctx)


# Two targets as agent.yaml would declare them: a kubeconfig and a Terraform workspace each, and vars.
TARGETS = TargetSet((
    Target("dev", {"KUBECONFIG": "/kube/dev.yaml", "TF_WORKSPACE": "dev"}, {"context": "dev-eu"}),
    Target("prod", {"KUBECONFIG": "/kube/prod.yaml", "TF_WORKSPACE": "prod"},
           {"context": "prod-eu", "var_file": "prod.tfvars"}),
))


@pytest.fixture
def library_on_targets(workdir: Path, temp_home: Path, stubs: Stubs) -> LibraryRunner:
    """The library over stubs in a project that declares TARGETS, sandboxed as ``library`` is."""
    ctx = RuntimeContext(workspace=workdir, host_env=dict(os.environ),
                         spill_dir=temp_home / ".local" / "state" / "nami" / "output", sandbox=stubs.sandbox())
    return LibraryRunner(ctx, TARGETS)


@pytest.fixture
def real_library(workdir: Path, temp_home: Path) -> LibraryRunner:
    """The library over the real programs of this machine."""
    ctx = RuntimeContext(workspace=workdir, host_env=dict(os.environ),
                         spill_dir=temp_home / ".local" / "state" / "nami" / "output")
    return LibraryRunner(ctx)


def terraform_config(workdir: Path) -> Path:
    """infra/: one variable (size, default 2) and its output, and prod.tfvars setting it to 5: terraform
    plans and applies it without any provider."""
    infra = workdir / "infra"
    infra.mkdir()
    (infra / "main.tf").write_text('variable "size" {\n  default = 2\n}\n\noutput "size" {\n  value = var.size\n}\n')
    (infra / "prod.tfvars").write_text("size = 5\n")
    return infra
