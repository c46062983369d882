"""Workers forked from a warm server: each task still runs in a process of its own, but that process is a
fork of one that imported nami and the openai SDK once (``multiprocessing``'s fork server), instead of a
new interpreter importing them again for every task (some 0.9 s of CPU a task, most of a short task's cost).

What a worker process guaranteed holds for a forked one: a process per task (a crash, a hung tool or a
runaway Python tool takes nothing else with it), in a session of its own (a Ctrl-C at the terminal reaches
the batch, which decides), its stdout for reports only and its stderr kept for a crash's message, the job's
environment and folder, its whole process tree killed from here past the wall time, and nothing shared
between tasks: the server only imports modules (no project is opened, no task runs there) and every task
is a fresh fork of it. Where there is no fork server (not Linux, or a Python before 3.11: see below),
workers start as new interpreters.

The server (and multiprocessing's resource tracker) is started as ``python -c ...`` in the batch's folder,
often a cloned repository; ``-c`` puts that folder first on ``sys.path``, so its ``multiprocessing/``,
``openai.py`` or ``nami_yaml/`` would be imported in place of the real ones, with the batch's environment
and no sandbox. They start with PYTHONSAFEPATH (Python 3.11+), which leaves the folder out. Their socket is
in a private folder under /tmp, which every sandbox has its own of: a tool could otherwise reach the server
(say with TMPDIR=/var/tmp, which sandboxes show) and have any code forked from it, outside its sandbox.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.process
import multiprocessing.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

# What every task imports, imported once by the server (the openai SDK is most of it). Modules only: the
# project (its tools, its trust) is opened by each task, in its own fork.
PRELOAD = ("nami_yaml.batch.warm",)
_READ_AFTER_EXIT = 5.0  # seconds to wait for the pipes' end once the worker has exited
SAFE_PATH = "PYTHONSAFEPATH"  # Python 3.11+: `python -c` puts no current folder on sys.path
SOCKET_BASE = Path("/tmp")  # the sandbox's /tmp is its own (runners/sandbox/plan.py PRIVATE_TMP)
# Held while a worker starts (the server may be started or started again then, with SAFE_PATH set in this
# process's environment) and while a worker's environment is read (which must not get that SAFE_PATH).
_starting = threading.Lock()
_context: Any = None


def available() -> bool:
    return (sys.platform.startswith("linux") and sys.version_info >= (3, 11)
            and "forkserver" in multiprocessing.get_all_start_methods())


def environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The batch's environment of now with ``extra``: a worker's (read while no server is starting)."""
    with _starting:
        return {**os.environ, **extra}


def _server_context() -> Any:
    """The fork server's context (under ``_starting``), its socket's folder chosen on first use."""
    global _context
    if _context is None:
        config = multiprocessing.process.current_process()._config  # what multiprocessing.util.get_temp_dir reads
        if config.get("tempdir") is None:
            with contextlib.suppress(OSError):
                folder = tempfile.mkdtemp(prefix="nami-forkserver-", dir=SOCKET_BASE)  # 0700
                config["tempdir"] = folder
                multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder, True), exitpriority=-100)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))
        _context = context
    return _context


@contextlib.contextmanager
def _without_current_folder() -> Iterator[None]:
    """While held (under ``_starting``), a Python started from here does not import from the current
    folder: the server, when this start is the one that starts it (again)."""
    before = os.environ.get(SAFE_PATH)
    os.environ[SAFE_PATH] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[SAFE_PATH]
        else:
            os.environ[SAFE_PATH] = before


class ForkedWorker:
    """One task's worker, forked from the warm server; answers as much of ``subprocess.Popen`` as the
    batch's wait needs (``communicate``, ``send_signal``, ``kill``, ``pid``, ``returncode``)."""

    def __init__(self, job_json: str, env: dict[str, str], cwd: Path):
        """``env``: the worker's whole environment (:func:`environment`)."""
        with _starting:
            context = _server_context()
            report_read, report_write = context.Pipe(duplex=False)
            err_read, err_write = context.Pipe(duplex=False)
            self._process = context.Process(target=_child, args=(job_json, env, str(cwd), report_write, err_write),
                                            name="nami-batch-worker")
            with _without_current_folder():
                self._process.start()
        report_write.close()  # the worker holds the writing ends now: their end of file is the worker's
        err_write.close()
        self.pid: int = self._process.pid  # type: ignore[assignment]
        self._out, self._err = bytearray(), bytearray()
        self._readers = [_reader(report_read, self._out), _reader(err_read, self._err)]

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def communicate(self, input: bytes | None = None, timeout: float | None = None) -> tuple[bytes, bytes]:
        """The worker's stdout and stderr once it has exited (``input``: given at the start, unused here);
        subprocess.TimeoutExpired while it runs."""
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired("nami batch worker", timeout or 0)
        for reader in self._readers:  # a process left behind may hold a pipe: not forever
            reader.join(_READ_AFTER_EXIT)
        return bytes(self._out), bytes(self._err)

    def send_signal(self, number: int) -> None:
        os.kill(self.pid, number)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def _reader(connection: Connection, into: bytearray) -> threading.Thread:
    def read() -> None:
        with connection:
            while chunk := os.read(connection.fileno(), 65536):
                into.extend(chunk)

    thread = threading.Thread(target=read, name="nami-batch-worker-pipe", daemon=True)
    thread.start()
    return thread


def _child(job_json: str, env: dict[str, str], cwd: str, report: Connection, err: Connection) -> None:
    """In the fork: become what ``python -m nami_yaml.batch.worker`` is, then run the job."""
    os.setsid()  # a session of its own, as start_new_session gave the worker
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(err.fileno(), 1)  # stray output (a Python tool's print) goes with stderr, as in the worker
    os.dup2(err.fileno(), 2)
    err.close()
    report_stream = os.fdopen(os.dup(report.fileno()), "w", encoding="utf-8")
    report.close()
    os.environ.clear()  # the server's is the batch's when it started: the worker gets the batch's of now
    os.environ.update(env)
    os.chdir(cwd)
    sys.stdout = sys.stderr
    from nami_yaml.batch.worker import run_job

    code = run_job(job_json, report_stream)
    sys.stderr.flush()
    os._exit(code)  # as the worker does: a tool thread stuck in Python code must not keep it waiting
