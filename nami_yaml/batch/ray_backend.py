"""The Ray backend (``--ray [ADDRESS]``, extra ``nami-yaml[ray]``): the same jobs as Ray tasks, each still
run in a worker process of its own on whichever node Ray picks, so results are those of the local pool.

Nothing is assumed shared with the nodes: the project folder travels through Ray's object store (packed
once, unpacked once per node, see ship.py), each job's paths are made relative to it, the model's settings
from the environment go with each job, and sessions and audit lines come back with each result. With
``shared=True`` (every node sees the same paths) nothing is shipped and paths stay as they are.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from nami_yaml.batch.job import Job
from nami_yaml.batch.records import RECORDS_KEY, records_problem
from nami_yaml.batch.results import new_result, result_problem
from nami_yaml.batch.ship import pack, run_on_node
from nami_yaml.errors import ConfigError, NamiError

INSTALL_HINT = "nami batch --ray needs Ray: pip install 'nami-yaml[ray]' (on this machine and on every Ray node)"

Emit = Callable[[str, Any], None]


class RayMissing(ConfigError):
    pass


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayMissing(INSTALL_HINT) from None
    return ray


def forwarded_env(settings: Any, environ: dict[str, str] | None = None) -> dict[str, str]:
    """What a node needs from this machine's environment to build the same agent: NAMI_* settings, the
    endpoint variable, and the variable the model's API key is read from."""
    environ = dict(os.environ if environ is None else environ)
    names = {n for n in environ if n.startswith("NAMI_") and n != "NAMI_CONFIG"} | {"OPENAI_BASE_URL"}
    source = getattr(settings, "api_key_source", "") or ""
    if source.startswith("$"):
        names.add(source[1:])
    return {n: environ[n] for n in sorted(names) if n in environ}


def shipped_root(config: Path | None, cwd: Path) -> Path:
    """The folder uploaded to the nodes: the project's (where agent.yaml is) when nami runs inside it,
    else the current one."""
    cwd = cwd.resolve()
    if config is not None and cwd.is_relative_to(config.parent):
        return config.parent
    return cwd


def for_nodes(jobs: list[Job], settings: Any, *, root: Path, shared: bool) -> list[Job]:
    """The jobs as a node sees them: this machine's model settings in their environment, the agent.yaml
    named explicitly (a node cannot walk up out of the upload, nor knows what was trusted here), records
    brought back, and (unless ``shared``) paths relative to ``root``, the uploaded folder."""
    env = forwarded_env(settings)
    config = settings.config_path
    shipped = []
    for job in jobs:
        # Named, so a node (which has no record of this machine's trust) runs what was trusted here.
        job = replace(job, env={**env, **job.env}, bring_back=True,
                      project=replace(job.project, config=str(config) if config else None))
        if shared:
            shipped.append(job)
            continue
        try:
            shipped.append(job.relative_to(root))
        except ValueError as exc:
            raise ConfigError(f"{exc}, the folder shipped to the Ray nodes: run nami batch from a folder "
                              "that holds the agent.yaml, the tool files and the task workspaces, or pass "
                              "--ray-shared if every node sees the same paths") from None
    return shipped


class RayBackend:
    node_function: Callable[..., Any] = staticmethod(run_on_node)  # what runs on the node (tests send others)

    def __init__(self, address: str | None, *, root: Path, shared: bool = False, workers: int | None = None):
        self.ray = import_ray()
        self.address = address or None
        self.root = root
        self.shared = shared
        self.workers = workers
        self._stop = False
        self._started_here = False
        self._parallel: int | None = None

    @property
    def description(self) -> str:
        return f"Ray at {self.address}" if self.address else "local Ray"

    def connect(self) -> int:
        """Join (or start) the cluster; how many tasks to keep running at once. Call it from the main
        thread (Ray sets signal handlers there); ``run`` calls it if nobody did."""
        if self._parallel is not None:
            return self._parallel
        ray = self.ray
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False,
                         include_dashboard=False)
            except Exception as exc:  # ConnectionError, RuntimeError, ValueError: said in Ray's words
                raise NamiError(f"cannot start or reach Ray{f' at {self.address}' if self.address else ''}: "
                                f"{exc}") from None
            self._started_here = True
        self._parallel = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self._parallel

    def run(self, jobs: list[Job], emit: Emit) -> None:
        ray = self.ray
        parallel = self.connect()
        try:
            package, digest = (None, None) if self.shared else pack(self.root)
            shipped = ray.put(package)  # sent to each node once, whatever the number of tasks
            remote = ray.remote(self.node_function).options(num_cpus=1, max_retries=0)
            pending = list(jobs)
            running: dict[Any, Job] = {}
            while (pending or running) and not self._stop:
                while pending and len(running) < parallel and not self._stop:
                    job = pending.pop(0)
                    running[remote.remote(shipped, digest, job.to_json())] = job
                    emit("start", job.task_id)
                ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
                for ref in ready:
                    self._emit(emit, self._get(ref, job := running.pop(ref)), job)
            for ref in running:  # stopping: the task kills its worker's tree when cancelled
                ray.cancel(ref)
            for ref, job in running.items():
                result = self._get(ref, job)
                if not isinstance(result, dict) or result.get("status") != "interrupted":
                    self._emit(emit, result, job)
        finally:
            if self._started_here:
                ray.shutdown()

    @staticmethod
    def _emit(emit: Emit, result: Any, job: Job) -> None:
        """A node's result as this machine can keep it: one that is not a result is skipped with a notice
        (the task counts as not run: --resume runs it again), records that cannot be kept are dropped."""
        problem = result_problem(result, job.task_id)
        if problem is not None:
            emit("skipped", {"id": job.task_id, "notice": f"task {job.task_id}: the Ray node sent back {problem}; "
                                                          "skipped (--resume runs it again)"})
            return
        if RECORDS_KEY in result and (why := records_problem(result[RECORDS_KEY])) is not None:
            del result[RECORDS_KEY]
            emit("notice", {"notice": f"task {job.task_id}: its session and audit records from the Ray node "
                                      f"are not kept: {why}"})
        emit("result", result)

    def _get(self, ref: Any, job: Job) -> Any:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.TaskCancelledError:
            result = new_result(job.task_id)
            result.update(status="interrupted", error="batch stopped")
            return result
        except self.ray.exceptions.RayError as exc:  # the node or its Ray worker died, the upload failed…
            result = new_result(job.task_id)
            result.update(status="crashed", error=f"Ray could not run the task: {_first_lines(str(exc))}")
            return result

    def stop(self) -> None:
        self._stop = True


def _first_lines(text: str, count: int = 6) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[:count]) + ("\n…" if len(lines) > count else "")
