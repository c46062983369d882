"""The tool runs against the plan that was hashed and shown, whatever is written where the plan file was: the
plan file is copied into a sealed memfd once planned, and the show step and the tool read that copy
(``/dev/fd/N``). A writer of the same user that rewrites or replaces the file after every check, while the tool
runs, changes nothing it reads; a reader that seeks (a zip, as terraform's plan is) reads it, in the bwrap
sandbox and without one. Real runs over the fake OpenAI server; real processes (the stub CLI of plan_tools.py)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.agent.events import Event, ToolResultEvent
from nami_yaml.approvals.plans import shown_plan
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.plan_tools import planner, planner_log  # noqa: F401 (a fixture)
from tests.helpers import write
from tests.programs import need_bwrap

pytestmark = pytest.mark.usefixtures("planner")  # the stub CLI first on PATH

LATE = """\
name: deploy_late
description: Deploy web at a size (reads its plan late).
risk: write
parameters: {type: object, properties: {size: {type: integer}}, required: [size]}
plan:
  command: [planner, plan, "--size={size}", "--out={plan_file}"]
  show: [planner, show, "{plan_file}"]
command: [planner, apply-late, "{plan_file}"]
"""

ZIP = """\
name: deploy_zip
description: Deploy web from a zip plan.
risk: write
parameters: {type: object, properties: {size: {type: integer}}, required: [size]}
plan:
  command: [planner, plan-zip, "{plan_file}", "{size}"]
  show: [planner, show-zip, "{plan_file}"]
command: [planner, apply-zip, "{plan_file}"]
"""


@pytest.fixture(params=["required", "off"])
def project(request: pytest.FixtureRequest, workdir: Path) -> Path:
    """A project with the plan tools, sandboxed by bwrap (``required``) or not (``off``)."""
    if request.param == "required":
        need_bwrap()
    write(workdir / "agent.yaml", "model: {provider: custom, name: fake-model}\n"
                                  "tools: {builtin: [], files: [tools/]}\n"
                                  f"sandbox: {{mode: '{request.param}'}}\n")
    write(workdir / "tools" / "late.yaml", LATE)
    write(workdir / "tools" / "zip.yaml", ZIP)
    return workdir


def run_once(project: Path, server: FakeOpenAIServer, tool: str, approve: object) -> str:
    server.add(tool_calls(call(tool, {"size": 3})), text("done"))
    events: list[Event] = []
    with Agent.from_config(project / "agent.yaml", base_url=server.base_url, model="fake-model", trust=True,
                           cwd=project, approve=approve, on_event=events.append) as agent:
        agent.run("go")
    [result] = [event for event in events if isinstance(event, ToolResultEvent)]
    return result.content


def wait_for(path: Path) -> None:
    """Wait for ``path`` to exist (a state the tool reaches), up to a minute."""
    for _ in range(1200):
        if path.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("how", ["rewrite", "replace"])
def test_a_writer_racing_the_tool_cannot_change_the_plan_it_reads(
        project: Path, fake_openai: FakeOpenAIServer, how: str) -> None:
    plan_files: list[Path] = []

    def approve(request: ApprovalRequest) -> bool:
        step = getattr(request.call, "plan_step", None)
        if step is not None and shown_plan(request.call) is not None:
            plan_files.append(step.file)
        return True

    def writer() -> None:
        # After the yes and after nami's last look at the file: the tool has started and not read it yet.
        wait_for(project / "started")
        [plan_file] = plan_files
        if how == "rewrite":
            plan_file.chmod(0o600)
            plan_file.write_text("destroy everything\n")
        else:
            other = plan_file.with_name("other")
            other.write_text("destroy everything\n")
            os.replace(other, plan_file)
        (project / "go").touch()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        told = run_once(project, fake_openai, "deploy_late", approve)
    finally:
        (project / "go").touch()
        thread.join(timeout=60)
    assert (project / "applied.txt").read_text() == "create web (size 3)\n", told
    [apply_argv] = [argv for argv in planner_log(project) if argv[0] == "apply-late"]
    assert apply_argv[1].startswith("/dev/fd/")  # the sealed copy, never the path a writer can reach


def test_a_plan_read_by_seeking_is_shown_and_applied_from_the_sealed_copy(
        project: Path, fake_openai: FakeOpenAIServer) -> None:
    shown: list[str] = []

    def approve(request: ApprovalRequest) -> bool:
        planned = shown_plan(request.call)
        if planned is not None:
            shown.append(planned.text)
        return True

    told = run_once(project, fake_openai, "deploy_zip", approve)
    assert shown == ["PLAN: create web (size 3) (tfplan state)\n"], told
    assert (project / "applied.txt").read_text() == "create web (size 3)\n", told
    show_argv = next(argv for argv in planner_log(project) if argv[0] == "show-zip")
    assert show_argv[1].startswith("/dev/fd/")
