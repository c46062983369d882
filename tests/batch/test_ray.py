"""The Ray backend: the same task file on a local Ray (started here, 2 CPUs) gives the results of the local
workers. Ray is an optional extra: without it these tests skip, saying why, except in CI, where
NAMI_REQUIRE_RAY=1 (set by .ci/run, which installs the extra) makes its absence a failure."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import cli
from nami_yaml.testing import call, text, tool_calls
from tests.batch.conftest import BatchProject, comparable

ROOT = Path(__file__).resolve().parents[2]
REQUIRED_VARIABLE = "NAMI_REQUIRE_RAY"


def need_ray() -> None:
    if importlib.util.find_spec("ray") is not None:
        return
    reason = "ray is not installed here (pip install -e '.[ray]')"
    if os.environ.get(REQUIRED_VARIABLE) == "1":
        pytest.fail(f"{reason}: {REQUIRED_VARIABLE}=1 requires it")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    need_ray()
    import ray

    environment = dict(os.environ)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        # ray.init sets variables in this process (RAY_AUTH_MODE=token, PYTHONBREAKPOINT…) that would leak
        # into every later test: the audit log would take RAY_AUTH_MODE's value for a secret.
        os.environ.clear()
        os.environ.update(environment)


def mixed_tasks(project: BatchProject, runs: int) -> list[dict[str, Any]]:
    fixture = project.folder / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "config.ini").write_text("debug = true\n")
    tasks: list[dict[str, Any]] = []
    for n in range(3):  # one task of each kind: each runs in a worker process of its own, on Ray as locally
        marker = f"[r{n}]"
        if n == 0:
            script = [tool_calls(call("edit_file", {"path": "config.ini", "old_text": "true", "new_text": "false"})),
                      text("turned debug off")]
            task = {"workspace": "fixtures/app", "setup": ["test -f config.ini"],
                    "checks": [{"file_contains": {"path": "config.ini", "text": "debug = false"}},
                               {"command": "! grep -q true config.ini"}, {"called": "edit_file"}]}
        elif n == 1:
            script = [text(f"it is {n}")]
            task = {"checks": [{"answer_matches": rf"\b{n}\b"}, {"not_called": "bash"}]}
        else:
            script = [text("wrong")]
            task = {"checks": [{"answer_matches": "right"}]}
        for _ in range(runs):
            project.server.add_task(marker, *script)
        tasks.append({"id": f"r{n}", "prompt": f"{marker} go", **task})
    return tasks


def test_ray_gives_the_results_of_local_workers(local_ray: Any, batch_project: BatchProject) -> None:
    tasks_file = batch_project.tasks(mixed_tasks(batch_project, runs=2))
    local, local_rows = batch_project.run(str(tasks_file), "--workers", "2", "--approve", "write",
                                          "-o", str(batch_project.folder / "local.jsonl"))
    on_ray, ray_rows = batch_project.run(str(tasks_file), "--ray", "--approve", "write",
                                         "-o", str(batch_project.folder / "ray.jsonl"))
    assert "3 tasks on local Ray" in on_ray.output
    assert local.exit_code == on_ray.exit_code == 1  # r2 fails its check
    assert len(ray_rows) == 3
    assert comparable(ray_rows) == comparable(local_rows)
    assert sum(r["passed"] for r in ray_rows) == 2, [(r["id"], r["status"], r["error"], r["checks"]) for r in ray_rows]
    assert all(r["session"] for r in ray_rows)
    assert batch_project.server.remaining == 0
    assert local_ray.is_initialized()  # a Ray started by the caller is left running


def test_a_path_outside_the_shipped_folder_is_refused_before_anything_runs(
        local_ray: Any, batch_project: BatchProject, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    tasks_file = batch_project.tasks([{"id": "x", "prompt": "[x] go", "workspace": str(outside)}])
    result, rows = batch_project.run(str(tasks_file), "--ray")
    assert result.exit_code == 2
    assert f"task x's workspace {outside} is outside {batch_project.folder}" in result.output
    assert "--ray-shared" in result.output and rows == []


def test_ci_installs_the_ray_extra_and_requires_it() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert f"export {REQUIRED_VARIABLE}=1" in script
    installed = re.search(r"pip install --quiet -e '\.\[([a-z,]+)\]'", script)
    assert installed and "ray" in installed.group(1).split(",")


def test_without_ray_the_message_says_what_to_install(batch_project: BatchProject,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    tasks_file = batch_project.tasks([{"id": "x", "prompt": "[x] go"}])
    result = CliRunner().invoke(cli, ["batch", "run", str(tasks_file), "--config", str(batch_project.config), "--ray"])
    assert result.exit_code == 2
    assert "nami batch --ray needs Ray: pip install 'nami-yaml[ray]'" in result.output


def test_a_nodes_malformed_result_is_skipped_with_a_notice(local_ray: Any, batch_project: BatchProject) -> None:
    """A node (or what runs on it) sending back something that is not a result crashed the whole batch
    mid-way: that task is skipped, saying why (--resume runs it again), and the batch goes on."""
    from nami_yaml.batch.ray_backend import RayBackend
    from nami_yaml.batch.results import ResultsFile, new_result
    from nami_yaml.batch.runner import BatchOptions, make_jobs, run_batch
    from nami_yaml.project_request import ProjectRequest
    from nami_yaml.spec.tasks import load_tasks

    def node(package: Any, digest: Any, job: dict[str, Any]) -> Any:  # pickled by value: runs on the node
        task_id = job["task"]["id"]
        good = {"id": task_id, "status": "answered", "passed": True, "checks": [], "answer": "ok", "steps": 1,
                "usage": None, "cost": None, "duration_s": 0.1, "session": None, "error": None, "model": None}
        return {"not-a-dict": ["a", "list"], "other-id": {**good, "id": "someone-else"},
                "bad-types": {**good, "steps": "many", "usage": ["x"]}, "good": good,
                "bad-records": {**good, "_records": {"host": "elsewhere", "session_id": "../../../../tmp/x",
                                                     "session": "planted", "audit": "not a list"}},
                }[task_id]

    ids = ["not-a-dict", "other-id", "bad-types", "good", "bad-records"]
    tasks_file = batch_project.tasks([{"id": task_id, "prompt": "go"} for task_id in ids])
    jobs = make_jobs(load_tasks(tasks_file), BatchOptions(ProjectRequest(cwd=batch_project.folder)))
    backend = RayBackend(None, root=batch_project.folder, shared=True, workers=2)
    backend.node_function = node  # type: ignore[method-assign]
    seen: list[tuple[str, Any]] = []
    with ResultsFile(batch_project.folder / "out.jsonl") as results:
        outcome = run_batch(jobs, backend, results, expected=ids,
                            on_progress=lambda kind, progress, payload: seen.append((kind, payload)))
    assert sorted(r["id"] for r in outcome.results) == ["bad-records", "good"]
    assert outcome.summary.missing == ["not-a-dict", "other-id", "bad-types"]
    notices = [payload["notice"] for kind, payload in seen if kind == "notice"]
    assert len(notices) == 4, notices
    assert any("not-a-dict" in n and "a list, not a result" in n for n in notices)
    assert any("bad-records" in n and "records" in n for n in notices)
    assert not Path("/tmp/x.jsonl").exists()
    assert set(new_result("x")) <= set(outcome.results[0])
