"""A batch from a task file to a results file: the project checked once here (trust, settings, model),
one job per task not yet in the results, a backend running them, and each result written as it comes.

Ctrl-C (KeyboardInterrupt while waiting) stops the batch: no new task starts, running ones are stopped
and left out of the results (``--resume`` runs them again), and every line already written stays valid.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nami_yaml.batch.job import DEFAULT_WALL_TIME, Job
from nami_yaml.batch.records import RECORDS_KEY, store
from nami_yaml.batch.results import ResultsFile, Summary, summarize
from nami_yaml.errors import NamiError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.spec.tasks import TaskFile

Emit = Callable[[str, Any], None]


class Backend(Protocol):
    description: str

    def run(self, jobs: list[Job], emit: Emit) -> None: ...

    def stop(self) -> None: ...


@dataclass
class BatchOptions:
    """How every task's agent is built: from ``project``, as ``nami run`` would open it."""

    project: ProjectRequest
    approve_risks: Sequence[str] = ()
    wall_time: float = DEFAULT_WALL_TIME
    keep_workspaces: bool = False
    scratch: Path | None = None
    trace: dict[str, str] | None = None  # traced: the batch's trace context (app/tracing.py batch_trace)


@dataclass
class Progress:
    """What a progress display shows; updated before each callback."""

    total: int  # tasks this run will start
    skipped: int = 0  # already in the results file (--resume)
    running: set[str] = field(default_factory=set)
    done: int = 0
    failed: int = 0
    cost: float = 0.0
    priced: int = 0  # finished tasks that reported a cost: none means the cost is unknown, not $0
    stopping: bool = False


@dataclass
class BatchOutcome:
    results: list[dict[str, Any]]  # every result in the file now, earlier ones included
    summary: Summary
    interrupted: bool


def make_jobs(task_file: TaskFile, options: BatchOptions, skip: set[str] = frozenset()) -> list[Job]:  # type: ignore[assignment]
    request = options.project
    cwd = request.folder.resolve()
    # Paths made absolute here: a worker starts in a folder of its own.
    project = request.but(cwd=cwd, tools=tuple(str(_absolute(t, cwd)) for t in request.tools),
                          config=str(_absolute(request.config, cwd)) if request.config else None)
    return [Job(task.raw, str(task.base), project, approve_risks=tuple(options.approve_risks),
                wall_time=options.wall_time, keep_workspace=options.keep_workspaces,
                scratch=str(options.scratch) if options.scratch else None, trace=dict(options.trace or {}))
            for task in task_file.tasks if task.id not in skip]


def _absolute(path: str, cwd: Path) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else cwd / candidate


def run_batch(jobs: list[Job], backend: Backend, results: ResultsFile, *, expected: list[str] | None = None,
              on_progress: Callable[[str, Progress, dict[str, Any] | None], None] | None = None,
              audit_path: Path | None = None) -> BatchOutcome:
    """Run ``jobs`` on ``backend``, appending each result to ``results``. ``on_progress(kind, progress,
    result)``: kind is "start", "result", "notice" (``result`` then holds ``notice``, the text) or "stopping". ``expected``: every id of the task file (default: the
    jobs' and those already in ``results``), for the summary's tasks not run."""
    progress = Progress(total=len(jobs), skipped=len(results.previous))
    written: list[dict[str, Any]] = []
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    runner = threading.Thread(target=_run_backend, args=(backend, jobs, events), name="nami-batch-backend",
                              daemon=True)
    runner.start()
    while True:
        try:
            try:
                kind, payload = events.get(timeout=0.2)
            except queue.Empty:
                if not runner.is_alive() and events.empty():
                    break
                continue
            _handle(kind, payload, progress, results, written, on_progress, audit_path)
        except KeyboardInterrupt:
            if not progress.stopping:
                progress.stopping = True
                backend.stop()
                _tell(on_progress, "stopping", progress, None)
    everything = results.previous + written
    if expected is None:
        expected = [r["id"] for r in results.previous] + [job.task_id for job in jobs]
    return BatchOutcome(everything, summarize(everything, expected), progress.stopping)


def _handle(kind: str, payload: Any, progress: Progress, results: ResultsFile, written: list[dict[str, Any]],
            on_progress: Callable[[str, Progress, dict[str, Any] | None], None] | None, audit_path: Path | None,
            ) -> None:
    if kind == "error":
        raise payload
    if kind == "start":
        progress.running.add(payload)
        _tell(on_progress, "start", progress, None)
        return
    if kind in ("notice", "skipped"):  # a backend's word about a task (skipped: it gave no result)
        progress.running.discard(payload.get("id"))
        _tell(on_progress, "notice", progress, payload)
        return
    progress.running.discard(payload["id"])
    if payload.get("status") == "interrupted":
        return  # stopped by us: not a result; --resume runs it again
    _keep_records(payload, audit_path)
    results.write(payload)
    written.append(payload)
    progress.done += 1
    progress.failed += not payload.get("passed")
    if isinstance(payload.get("cost"), (int, float)):
        progress.cost += payload["cost"]
        progress.priced += 1
    _tell(on_progress, "result", progress, payload)


def _run_backend(backend: Backend, jobs: list[Job], events: queue.Queue[tuple[str, Any]]) -> None:
    try:
        backend.run(jobs, lambda kind, payload: events.put((kind, payload)))
    except NamiError as exc:  # e.g. Ray cannot be reached: the main thread raises it
        events.put(("error", exc))
    except Exception as exc:  # a backend's own failure, told in its words rather than as a traceback
        events.put(("error", NamiError(f"the batch stopped: {type(exc).__name__}: {exc}")))


def _keep_records(result: dict[str, Any], audit_path: Path | None) -> None:
    records = result.pop(RECORDS_KEY, None)
    if records is not None and audit_path is not None:
        store(records, audit_path=audit_path)


def _tell(callback: Callable[[str, Progress, dict[str, Any] | None], None] | None, kind: str, progress: Progress,
          result: dict[str, Any] | None) -> None:
    if callback is not None:
        callback(kind, progress, result)
