"""Running one job in a worker process of its own, and getting its result back as data whatever happens:
the local pool calls this from a thread per slot, a Ray node calls it as a Ray task.

The worker enforces the task's wall time itself (reporting ``timeout`` with what it knows). If it has not
reported within the wall time plus a grace, its whole process tree is killed from here. A worker that dies
without a result is reported as ``crashed`` with its exit and the end of its stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nami_yaml.approvals.clock import WAIT_FILE_ENV, waited_in
from nami_yaml.batch import forked
from nami_yaml.batch.job import Job
from nami_yaml.batch.proctree import kill_tree
from nami_yaml.batch.results import new_result

# `python -m nami_yaml.batch.worker`, but with the current folder (the project's, maybe a cloned repository's)
# off sys.path before anything is imported: -m and -c put it first, so a nami_yaml/ or openai.py there would
# be imported in place of the real one, outside any sandbox. (Not -I, which would drop the PYTHONPATH the
# batch was given; not -P, which Python 3.10 lacks; a PYTHONSAFEPATH of the batch already leaves it out.)
WORKER = ("-c", "import sys\nif sys.path[:1] == ['']: del sys.path[0]\nimport runpy\n"
                "runpy.run_module('nami_yaml.batch.worker', run_name='__main__', alter_sys=True)")
KILL_GRACE = 15.0  # beyond the wall time (the worker's own timeout needs a few seconds to report)
STOP_GRACE = 10.0  # after SIGTERM (the batch is stopping), before the tree is killed
STDERR_TAIL = 2_000
_POLL = 0.25


def run_isolated(job_data: dict[str, Any], stop: threading.Event | None = None, *,
                 root: Path | None = None, warm: bool = False) -> dict[str, Any]:
    """Run ``job_data`` (a :class:`Job` as JSON) in a new worker process; its result as a dict.

    ``stop``: set to stop the task (the batch is stopping): the worker is asked to stop, then killed.
    ``root``: the folder the job's relative paths are relative to (a shipped project), else the current one.
    ``warm``: the worker is forked from the warm server (batch/forked.py) where there is one, rather than
    a new interpreter that imports everything again.
    A KeyboardInterrupt here (Ray cancelling the task) kills the worker's tree and is raised again.
    """
    job = Job.from_json(job_data)
    started = time.monotonic()
    # Where the worker says how long it waited for approvals (not counted in its wall time): approvals/clock.py
    handle, name = tempfile.mkstemp(prefix="nami-approval-wait-", suffix=".json")
    os.close(handle)
    wait_file = Path(name)
    env = forked.environment({**job.env, WAIT_FILE_ENV: str(wait_file)})
    proc: Any
    if warm and forked.available():
        proc = forked.ForkedWorker(json.dumps(job.to_json()), env, root or Path.cwd())
    else:
        proc = subprocess.Popen([sys.executable, *WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=root or Path.cwd(),
                                # Its own session: a Ctrl-C at the terminal reaches the batch, which decides.
                                start_new_session=True)
    try:
        out, err, ended = _wait(proc, json.dumps(job.to_json()).encode(), started + job.task_wall_time + KILL_GRACE,
                                stop, lambda: waited_in(wait_file))
    except BaseException:
        kill_tree(proc.pid)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=5)
        raise
    finally:
        with contextlib.suppress(OSError):
            wait_file.unlink()
    result = _result(job, out, err, proc.returncode, ended)
    result["duration_s"] = round(time.monotonic() - started, 3)
    return result


def _wait(proc: Any, data: bytes, backstop: float,
          stop: threading.Event | None, waited: Callable[[], float] = lambda: 0.0) -> tuple[bytes, bytes, str | None]:
    """The worker's stdout and stderr once it exits, and why it was ended early (None: it exited).
    ``waited``: the seconds it waited for approvals, which move the backstop."""
    send: bytes | None = data
    term_deadline: float | None = None
    ended: str | None = None
    while True:
        try:
            out, err = proc.communicate(input=send, timeout=_POLL)
            return out, err, ended
        except subprocess.TimeoutExpired:
            send = None  # communicate keeps what it read, and writes the input only once
        now = time.monotonic()
        if stop is not None and stop.is_set() and term_deadline is None:
            ended, term_deadline = "stopped", now + STOP_GRACE
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        if (term_deadline is not None and now >= term_deadline) or (now >= backstop and now >= backstop + waited()):
            ended = ended or "timeout"
            kill_tree(proc.pid)
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # something outside the tree holds the pipes open
                proc.kill()
                out, err = b"", b""
            return out, err, ended


def _reports(out: bytes) -> tuple[str | None, dict[str, Any] | None]:
    session = result = None
    for line in out.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") == "started":
            session = record.get("session")
        elif isinstance(record, dict) and record.get("type") == "result" and isinstance(record.get("result"), dict):
            result = record["result"]
    return session, result


def _result(job: Job, out: bytes, err: bytes, code: int | None, ended: str | None) -> dict[str, Any]:
    session, reported = _reports(out)
    if reported is not None:
        return reported
    result = new_result(job.task_id)
    result["session"] = session
    tail = err.decode("utf-8", errors="replace").strip()[-STDERR_TAIL:]
    if ended == "timeout":
        wall = job.task_wall_time
        result.update(status="timeout", error=f"still running {wall:g} s (its wall time) + {KILL_GRACE:g} s "
                                              "after it started; its processes were killed")
    elif ended == "stopped":
        result.update(status="interrupted", error="batch stopped")
    else:
        result.update(status="crashed", error=f"the task's worker process {_how_it_ended(code)} without a "
                                              "result" + (f"; its last output:\n{tail}" if tail else ""))
    return result


def _how_it_ended(code: int | None) -> str:
    if code is None:
        return "ended"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"
