"""A project whose write tool asks, with ``approvals.via: queue``; a real ``nami run`` without a terminal
waits on it while another process answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nami_yaml.testing import FakeOpenAIServer
from tests.helpers import run_nami, write

# A write tool that runs on a target: what it makes is the proof it ran.
MARKER = """\
name: make_marker
description: Create a marker file on a target.
risk: write
target: true
parameters: {type: object, properties: {name: {type: string}}, required: [name]}
command: [touch, "{name}"]
"""


def agent_yaml(approvals: str = "", targets: str = "") -> str:
    return ("model: {provider: custom, name: fake-model}\n"
            "tools: {builtin: [], files: [tools/]}\n"
            "approvals:\n  via: queue\n  path: queue\n  timeout: 60\n" + approvals
            + "targets:\n  dev: {env: {STAGE: dev}}\n  prod: {env: {STAGE: prod}}\n" + targets
            + "default_target: dev\n")


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "tools" / "marker.yaml", MARKER)
    write(workdir / "agent.yaml", agent_yaml())
    return workdir


def trust(project: Path) -> None:
    subprocess.run([sys.executable, "-m", "nami_yaml", "trust", "--yes"], cwd=project, check=True,
                   capture_output=True)


class Run:
    """``nami run`` as a real process with no terminal (stdin from /dev/null)."""

    def __init__(self, project: Path, server: FakeOpenAIServer, task: str, *args: str,
                 env: dict[str, str] | None = None):
        self.project = project
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nami_yaml", "run", *args, task], cwd=project, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "NAMI_BASE_URL": server.base_url, **(env or {})})

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        run.kill()


def pending_ids(queue: Path) -> list[str]:
    found = []
    for file in sorted(queue.glob("*.json")) if queue.is_dir() else []:
        if ".answer." in file.name or ".receipt." in file.name:
            continue
        data = json.loads(file.read_text())
        if data.get("state") == "pending":
            found.append(data["id"])
    return found


def wait_for_pending(queue: Path, run: Run, count: int = 1, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = pending_ids(queue)
        if len(found) >= count:
            return found
        if run.process.poll() is not None:
            raise AssertionError(f"the run ended without waiting: {run.finish()}")
        time.sleep(0.1)
    raise AssertionError("no pending approval appeared")


def approvals(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``nami approvals …`` as another process, in the project (its agent.yaml names the queue)."""
    return run_nami(None, "approvals", *args, cwd=project, env=env)


def audit_lines() -> list[dict[str, object]]:
    from nami_yaml.policy.audit import default_audit_path

    path = default_audit_path()
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def start(project: Path, server: FakeOpenAIServer, runs: list[Run], *, target: str = "dev",
          answer: str = "done") -> tuple[Run, str]:
    """A trusted project's run that calls make_marker (on ``target``) and waits; the id it waits on."""
    from nami_yaml.testing import call, text, tool_calls

    trust(project)
    server.add(tool_calls(call("make_marker", {"name": "marker.txt", "target": target})), text(answer))
    run = Run(project, server, "make the marker")
    runs.append(run)
    [approval_id] = wait_for_pending(project / "queue", run)
    return run, approval_id
