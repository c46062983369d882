"""``nami batch run TASKS`` and ``nami batch compare A B``: thin over nami_yaml.batch."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from nami_yaml.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    config_option,
    handle_errors,
    prompt_trust,
    tools_option,
)
from nami_yaml.cli.run import parse_risks
from nami_yaml.display import plural
from nami_yaml.project_request import ProjectRequest


@click.group("batch")
def batch_group() -> None:
    """Run many tasks at once, each in a fresh workspace, checked.

    `nami batch run TASKS` runs a task file; `nami batch compare A B` shows what changed between two runs.
    """


@batch_group.command("run")
@click.argument("tasks_file", metavar="TASKS", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Results file, JSONL (default: TASKS' name + .results.jsonl, here).")
@click.option("--workers", "-w", type=click.IntRange(min=1), metavar="N",
              help="Tasks at once (default 4 here; with --ray, the cluster's CPUs).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
              help="Run the tasks on Ray: a local Ray without ADDRESS, else the cluster at ADDRESS (ray://… or host:port).")
@click.option("--ray-shared", is_flag=True,
              help="With --ray: every node sees this machine's paths (a shared file system); upload nothing.")
@click.option("--resume", is_flag=True, help="Keep the results file and run only the tasks it has no result for.")
@click.option("--approve", "approve_risks", metavar="RISKS", callback=parse_risks,
              help="Approve calls of these risks that would ask, e.g. read,write (nobody can be asked in a batch).")
@click.option("--wall-time", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Seconds for a task that sets no limits.wall_time (default 1800).")
@click.option("--keep-workspaces", is_flag=True, help="Keep each task's workspace; its path is in the result.")
@click.option("--fresh-workers", is_flag=True,
              help="Start each local worker as a new Python (importing everything again) instead of forking it "
                   "from a warm one: slower; for comparison.")
@click.option("--yes", "-y", "trust_tasks", is_flag=True,
              help="Trust the task file's commands (setup:, command: checks, env:) without asking: for CI.")
@config_option
@click.option("--model", "-m", "model_name", metavar="NAME", help="Model name (overrides $NAMI_MODEL and agent.yaml).")
@click.option("--base-url", metavar="URL", help="OpenAI-compatible endpoint (overrides $NAMI_BASE_URL).")
@click.option("--max-steps", type=click.IntRange(min=1), help="Step limit for tasks that set none.")
@tools_option
@handle_errors
def run(tasks_file: Path, output: Path | None, workers: int | None, ray_address: str | None, ray_shared: bool,
        resume: bool, approve_risks: tuple[str, ...], wall_time: float | None, keep_workspaces: bool,
        fresh_workers: bool, trust_tasks: bool, config: str | None, model_name: str | None, base_url: str | None, max_steps: int | None,
        extra_tools: tuple[str, ...]) -> None:
    """Run every task of TASKS (YAML or JSONL; see `nami schema tasks`), each in a fresh copy of its
    workspace, and check it. One result line per task goes to the results file as it ends; a summary
    follows. Calls that would ask for approval are refused unless --approve allows their risk. A task file
    that runs commands is trusted first, like an agent.yaml: asked on a terminal, --yes for CI.

    Exit codes: 0 every task passed, 1 a task failed (or was not run), 2 usage or config error, 130 interrupted.
    """
    from nami_yaml.app.assembly import build_model
    from nami_yaml.app.project import open_project
    from nami_yaml.app.tracing import batch_trace
    from nami_yaml.batch.job import DEFAULT_WALL_TIME
    from nami_yaml.batch.pool import LocalPool
    from nami_yaml.batch.results import ResultsFile
    from nami_yaml.batch.runner import BatchOptions, make_jobs, run_batch
    from nami_yaml.batch.trust import ensure_task_file_trusted
    from nami_yaml.cli.batch_view import ProgressView, echo_lines, summary_lines
    from nami_yaml.policy.audit import configured_path
    from nami_yaml.spec.tasks import load_tasks

    task_file = load_tasks(tasks_file)
    ensure_task_file_trusted(task_file, (lambda request: True) if trust_tasks else prompt_trust)
    request = ProjectRequest(config=config, cwd=Path.cwd(), tools=extra_tools, flags={
        "model.name": model_name, "model.base_url": base_url, "limits.max_steps": max_steps})
    options = BatchOptions(request, approve_risks=approve_risks, wall_time=wall_time or DEFAULT_WALL_TIME,
                           keep_workspaces=keep_workspaces)
    # The project once, before any task: an untrusted agent.yaml, a bad setting or a model that cannot be
    # built fails the batch here instead of failing every task. Each task starts its own MCP servers.
    project = open_project(request, trust=prompt_trust, will_run=True, tool_servers=False, needs_model=True)
    build_model(project.settings)
    output = output or Path(f"{tasks_file.name.rsplit('.', 1)[0]}.results.jsonl")
    with ResultsFile(output, resume=resume) as results, \
            batch_trace(project, tasks_file.name, len(task_file.tasks)) as batch_context:
        options.trace = batch_context  # traced: each task's trace links to the batch's
        jobs = make_jobs(task_file, options, skip=results.done_ids())
        if ray_address is not None:
            backend: Any = ray_backend(ray_address, ray_shared, workers, project, jobs)
            jobs = backend.jobs
        else:
            backend = LocalPool(workers or 4, warm=not fresh_workers)
        resumed = f", {len(results.previous)} already done" if results.previous else ""
        click.echo(f"nami batch: {plural(len(jobs), 'task')} on {backend.description}{resumed}", err=True)
        view = ProgressView()
        try:
            outcome = run_batch(jobs, backend, results, expected=task_file.ids(), on_progress=view,
                                audit_path=configured_path(project.settings.audit.path))
        finally:
            view.close()
    echo_lines(summary_lines(outcome.summary, outcome.results, str(output)))
    if outcome.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_OK if outcome.summary.all_passed else EXIT_ERROR)


def ray_backend(address: str, shared: bool, workers: int | None, project: Any, jobs: list[Any]) -> Any:
    """The Ray backend, connected, with the jobs as the nodes will see them (``backend.jobs``)."""
    from nami_yaml.batch.ray_backend import RayBackend, for_nodes, shipped_root

    root = shipped_root(project.settings.config_path, Path.cwd())
    backend = RayBackend(address, root=root, shared=shared, workers=workers)
    backend.jobs = for_nodes(jobs, project.settings, root=root, shared=shared)
    backend.connect()
    return backend


@batch_group.command("compare")
@click.argument("a", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summaries and changes as one JSON object.")
@handle_errors
def compare(a: Path, b: Path, as_json: bool) -> None:
    """Show which tasks changed from results A to results B: passed to failed first, then fixed, then
    status, steps and cost changes. Exit code 1 when a task that passed in A fails in B."""
    from nami_yaml.batch.compare import compare as compare_results
    from nami_yaml.batch.results import read_results
    from nami_yaml.cli.batch_view import comparison_lines, echo_lines

    comparison = compare_results(read_results(a), read_results(b))
    if as_json:
        click.echo(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False))
    else:
        echo_lines(comparison_lines(comparison, os.fspath(a), os.fspath(b)))
    sys.exit(EXIT_ERROR if comparison.regressions else EXIT_OK)
