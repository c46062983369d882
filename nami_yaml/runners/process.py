"""The one place nami starts subprocesses: YAML command/script tools, the ``bash`` built-in, MCP servers.

Hygiene kept here: a scrubbed, non-interactive environment; stdin closed unless given; the child in its
own session so the whole process tree can be killed; a deadline; output read as a capped stream (memory
stays bounded, the full output is spilled to a file); failures returned as results, never raised. And
each child in the sandbox its request's plan describes (runners/sandbox): the plan is a required field.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from nami_yaml.procfs import processes
from nami_yaml.runners.output import MAX_SAVED_OUTPUT, OutputCapture, SaveBudget
from nami_yaml.runners.program_path import forget, located
from nami_yaml.runners.sandbox.bwrap import close_all, wrap
from nami_yaml.runners.sandbox.failure import SandboxFailure, classify_failure
from nami_yaml.runners.sandbox.plan import SandboxPlan
from nami_yaml.setting_defaults import LIMITS

_READ_SIZE = 64 * 1024
_STDIN_CHUNK = 64 * 1024
_POLL = 0.1  # how often the cancel switch and the child's state are checked
_DRAIN_WINDOW = 1.0  # after the child exits, how long descendants may keep its pipes open
_KILL_GRACE = 0.75  # between SIGTERM and SIGKILL
_FINAL_DRAIN = 0.5  # after a kill, how long to collect what is still in the pipes
_EXIT = object()  # the role of the pidfd that signals the child's exit
_STDIN = object()  # the role of the child's stdin, fed while it is open
_STDERR_SHARE = 4  # stderr gets a quarter of the output budget (at least 2,000 bytes)


@dataclass
class ProcessRequest:
    argv: list[str]
    cwd: Path
    env: dict[str, str]  # the complete child environment (already scrubbed by child_environment)
    stdin: bytes | None = None  # None: stdin is /dev/null; bytes: fed, then closed
    timeout: float = float(LIMITS["tool_timeout"])
    max_output: int = LIMITS["max_output"]  # bytes of stdout the model sees (head + tail); stderr gets a share
    spill_dir: Path | None = None  # where the full output is kept when truncated
    max_saved: int = MAX_SAVED_OUTPUT  # bytes of saved output for this call; past it saving stops, the tool goes on
    cancel: threading.Event | None = None  # set by Ctrl-C handling: kill the group, result.interrupted
    # Descriptors the child inherits (as the same numbers, through bwrap too): a sealed plan file's
    # (runners/plan_step.py), which the tool reads as /dev/fd/N. Every other descriptor is closed.
    pass_fds: tuple[int, ...] = ()
    # The sandbox it runs in (runners/sandbox.plan_for); None runs it as it is. No default: each caller says.
    sandbox: SandboxPlan | None = field(kw_only=True)


@dataclass
class ProcessResult:
    exit_code: int | None  # None when we killed it (timeout/interrupt); -N when signal N ended it
    stdout: str
    stderr: str
    timed_out: bool
    interrupted: bool
    truncated: bool
    total_bytes: int  # stdout + stderr bytes the process really wrote
    spill_path: Path | None  # full stdout when truncated (else full stderr, if only that was truncated)
    duration: float
    timeout: float | None = None  # the limit that applied, for the "timed out after N s" line
    stragglers_killed: bool = False  # the child exited, but descendants held its output open and were killed
    saved_capped: bool = False  # the output passed max_saved bytes: the saved file was cut, the tool went on
    leftovers_killed: bool = False  # the tool returned leaving processes in its group; they were killed
    max_saved: int = MAX_SAVED_OUTPUT
    # stdout on its own, for shaping (runners/shape.py): whether it was cut, and the file holding all of it
    # (None when nothing was cut, or it could not be saved; when the saved file stopped at max_saved, too).
    stdout_truncated: bool = False
    stdout_file: Path | None = None
    sandbox_failure: SandboxFailure | None = None  # what the sandbox refused, and the key that would allow it

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def format(self) -> str:
        """The text the model reads: stdout, ``[stderr]`` + stderr, then status lines only if notable."""
        sections: list[str] = []
        out = self.stdout.rstrip()
        if out:
            sections.append(out)
        err = self.stderr.rstrip()
        if err:
            sections.append("[stderr]\n" + err)
        sections.extend(self.status_lines())
        return "\n".join(sections) if sections else "(no output)"

    def status_lines(self) -> list[str]:
        """nami's own notes on how the process ended, only when notable (``[exit code: 1]``...)."""
        lines = []
        if self.timed_out:
            limit = self.timeout if self.timeout is not None else self.duration
            lines.append(f"[timed out after {limit:g} s; process group killed]")
        elif self.interrupted:
            lines.append("[interrupted]")
        elif self.exit_code not in (0, None):
            lines.append(f"[exit code: {self.exit_code}{_signal_suffix(self.exit_code)}]")
        if self.stragglers_killed:
            lines.append("[background processes still holding the output were killed]")
        elif self.leftovers_killed:
            lines.append("[background processes the tool left running were killed]")
        if self.sandbox_failure is not None:
            lines.append(self.sandbox_failure.note)
        return lines


def _signal_suffix(code: int | None) -> str:
    if code is None or code >= 0:
        return ""
    try:
        return f" ({signal.Signals(-code).name})"
    except ValueError:
        return ""


def _failed_start(message: str, exit_code: int | None, started: float, timeout: float) -> ProcessResult:
    return ProcessResult(
        exit_code=exit_code,
        stdout="",
        stderr=message,
        timed_out=False,
        interrupted=False,
        truncated=False,
        total_bytes=0,
        spill_path=None,
        duration=time.monotonic() - started,
        timeout=timeout,
    )


def _spawn(request: ProcessRequest, started: float) -> subprocess.Popen[bytes] | ProcessResult:
    """Start the child, or explain in a result why it could not start."""
    argv = list(request.argv)
    if not argv:
        return _failed_start("no command given", 127, started, request.timeout)
    if not Path(request.cwd).is_dir():
        return _failed_start(f"working directory not found: {request.cwd}", 126, started, request.timeout)
    plan = request.sandbox
    if plan is not None and plan.refusal is not None:
        return _failed_start(plan.refusal, 126, started, request.timeout)
    if plan is not None and plan.active:
        # Inside, bwrap would report these in words of its own; the same messages as without it.
        missing = _start_problem(argv, request.cwd, request.env)
        if missing is not None:
            return _failed_start(missing[0], missing[1], started, request.timeout)
    command, keep = wrap(plan, argv, Path(request.cwd))  # bwrap's argv where sandboxed; messages name the tool's
    try:
        # Unsandboxed, a program named on the PATH starts from where it was found before (runners/program_path);
        # if that fails, nothing ran, and it is looked for again.
        program = str(argv[0]) if plan is None or not plan.active else ""
        where = located(program, request.env) if program else None
        if where is not None:
            try:
                return _popen(command, request, keep, where)
            except OSError:
                forget(program, request.env)
        return _popen(command, request, keep, None)
    except FileNotFoundError:
        program = str(argv[0])
        if os.sep in program and Path(request.cwd, program).is_file():
            # The file is there, so what is missing is the interpreter its #! line names.
            message = f"cannot run {program}: interpreter in its #! line not found"
        else:
            message = f"command not found: {program}"
        return _failed_start(message, 127, started, request.timeout)
    except PermissionError:
        return _failed_start(f"permission denied: {argv[0]}", 126, started, request.timeout)
    except (OSError, ValueError, TypeError) as exc:
        return _failed_start(f"cannot run {argv[0]!s}: {exc}", 126, started, request.timeout)
    finally:
        close_all(keep)


def _popen(command: list[str], request: ProcessRequest, keep: tuple[int, ...],
           executable: str | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        executable=executable,
        cwd=request.cwd,
        env=request.env,
        stdin=subprocess.DEVNULL if request.stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Own session: no controlling terminal (a password prompt fails instead of hanging), our
        # Ctrl-C does not reach it, and its pid names a process group we can kill as a whole.
        start_new_session=True,
        close_fds=True,
        pass_fds=(*keep, *request.pass_fds),
    )


def _start_problem(argv: list[str], cwd: Path, env: Mapping[str, str]) -> tuple[str, int] | None:
    """Why ``argv[0]`` cannot start (as Popen would find it: on the child's PATH, or relative to cwd)."""
    program = str(argv[0])
    if os.sep in program:
        target = Path(cwd, program)
        if not target.exists():
            return f"command not found: {program}", 127
        return None if os.access(target, os.X_OK) else (f"permission denied: {program}", 126)
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        return f"command not found: {program}", 127
    return None


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """True once the child has exited, without reaping it.

    Leaving the zombie in place keeps its pid (which is also the process group id) from being reused
    by an unrelated process before we are done signalling the group.
    """
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (AttributeError, ChildProcessError):  # no waitid on this platform, or already reaped
        return proc.poll() is not None
    return info is not None


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is left in the group.

    ``killpg(pgid, 0)`` alone is not enough: killed descendants linger as zombies until init reaps
    them, which some container inits do only every few seconds.
    """
    listed = processes()
    if listed is None:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return any(p.pgid == pgid and p.alive for p in listed)


_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def _last_pid() -> int | None:
    """The pid this pid namespace handed out last (Linux), or None where it cannot be read."""
    try:
        fd = os.open(_LAST_PID, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return int(os.read(fd, 32))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _left_running(proc: subprocess.Popen[bytes]) -> bool:
    """After the child exited (its zombie kept): whether anything it started is still alive in its group.

    Every member of the group is a descendant created after the child. If the namespace's last pid is
    still the child's own, nothing was created since (its pid cannot be handed out again while its zombie
    is kept), so the group holds the zombie alone and the list of every process (a read of each one's
    /proc entry, the largest part of a short call) is not needed. Only a process with CAP_CHECKPOINT_RESTORE
    could create one without moving that number (clone3's set_tid), and such a process can leave with setsid
    anyway."""
    if _last_pid() == proc.pid:
        return False
    return _group_alive(proc.pid)


def _ends_with_its_namespace(plan: SandboxPlan | None) -> bool:
    """Whether everything the call started ended with it, by construction: in a sandbox of its own pid
    namespace, the kernel kills every process left in it when its first process (bwrap's init) exits, and
    bwrap exits after that. Then the list of every process of the machine (2 ms and growing with their
    number, after every call) is not needed."""
    return plan is not None and plan.active and "--unshare-pid" in plan.runner


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's whole process group, a short grace, then SIGKILL whatever is left."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + _KILL_GRACE
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Pump:
    """Moves bytes between us and the child's pipes with one poll(): no thread per pipe, no deadlock."""

    def __init__(self, proc: subprocess.Popen[bytes], request: ProcessRequest):
        # poll() itself, as subprocess's own communicate() uses: for three or four descriptors it needs no
        # kernel object and no registration calls (epoll's cost eight more system calls per process), and
        # without the selectors module's keys and maps around it (bench/: per step).
        self._poll = select.poll()
        self._files: dict[int, IO[bytes]] = {}
        self._roles: dict[int, OutputCapture | object] = {}  # what each registered descriptor is for
        cap = max(0, request.max_output)
        self.budget = SaveBudget(request.max_saved)
        self.out = OutputCapture(cap, request.spill_dir, "stdout", self.budget)
        self.err = OutputCapture(min(cap, max(2_000, cap // _STDERR_SHARE)), request.spill_dir, "stderr",
                                 self.budget)
        assert proc.stdout is not None and proc.stderr is not None
        self._watch(proc.stdout, select.POLLIN, self.out)
        self._watch(proc.stderr, select.POLLIN, self.err)
        self._exit_fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # pidfds need Linux >= 5.3
            self._exit_fd = os.pidfd_open(proc.pid)
            # Readable once the child exits: the loop wakes at once instead of on its next poll.
            self._poll.register(self._exit_fd, select.POLLIN)
            self._roles[self._exit_fd] = _EXIT
        self._stdin_data = memoryview(request.stdin or b"")
        self._stdin_sent = 0
        if proc.stdin is not None:
            if self._stdin_data:
                # Non-blocking writes, interleaved with reads: a child that answers while we are still
                # feeding it can never fill its stdout pipe while we sit blocked on its stdin.
                os.set_blocking(proc.stdin.fileno(), False)
                self._watch(proc.stdin, select.POLLOUT, _STDIN)
            else:
                proc.stdin.close()

    def _watch(self, pipe: IO[bytes], events: int, role: OutputCapture | object) -> None:
        fd = pipe.fileno()
        self._files[fd] = pipe
        self._roles[fd] = role
        self._poll.register(fd, events)

    @property
    def open(self) -> bool:
        return bool(self._files)

    def step(self, wait: float) -> None:
        if not self._roles:
            time.sleep(max(0.0, wait))
            return
        # In milliseconds, rounded up (as selectors does): rounding down would spin until the deadline.
        for fd, _events in self._poll.poll(math.ceil(max(0.0, wait) * 1000)):
            role = self._roles.get(fd)  # (None: dropped by an earlier event of this round)
            if role is _EXIT:
                self._forget_exit_fd()
            elif role is _STDIN:
                self._write_stdin(fd)
            elif isinstance(role, OutputCapture):
                try:
                    chunk = os.read(fd, _READ_SIZE)
                except OSError:
                    chunk = b""
                if chunk:
                    role.feed(chunk)
                else:
                    self._drop(fd)

    def _write_stdin(self, fd: int) -> None:
        start = self._stdin_sent
        try:
            sent = os.write(fd, self._stdin_data[start : start + _STDIN_CHUNK])
        except BlockingIOError:
            return
        except OSError:  # BrokenPipeError: the child stopped reading; that is its business
            self._drop(fd)
            return
        self._stdin_sent += sent
        if self._stdin_sent >= len(self._stdin_data):
            self._drop(fd)

    def _unregister(self, fd: int) -> None:
        if self._roles.pop(fd, None) is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._poll.unregister(fd)

    def _drop(self, fd: int) -> None:
        pipe = self._files.pop(fd, None)
        if pipe is None:
            return
        self._unregister(fd)
        with contextlib.suppress(OSError):
            pipe.close()

    def _forget_exit_fd(self) -> None:
        if self._exit_fd is None:
            return
        self._unregister(self._exit_fd)
        with contextlib.suppress(OSError):
            os.close(self._exit_fd)
        self._exit_fd = None

    def drain(self, seconds: float) -> None:
        """Collect what is still buffered in the pipes, for at most ``seconds``."""
        deadline = time.monotonic() + seconds
        while self.open and (left := deadline - time.monotonic()) > 0:
            self.step(min(left, _POLL))

    def close(self) -> None:
        for fd in list(self._files):
            self._drop(fd)
        self._forget_exit_fd()
        self.out.close()
        self.err.close()


def run_process(request: ProcessRequest) -> ProcessResult:
    """Run ``request.argv`` to completion, timeout or cancellation. Never raises for process failures."""
    started = time.monotonic()
    if request.cancel is not None and request.cancel.is_set():
        result = _failed_start("", None, started, request.timeout)
        result.interrupted = True
        return result
    spawned = _spawn(request, started)
    if isinstance(spawned, ProcessResult):
        return spawned
    proc = spawned
    try:
        pump = _Pump(proc, request)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    deadline = started + max(0.0, request.timeout)
    timed_out = interrupted = stragglers = leftovers = False
    exited_on_its_own = False
    drain_deadline: float | None = None
    try:
        while True:
            now = time.monotonic()
            if request.cancel is not None and request.cancel.is_set():
                interrupted = True
                break
            if now >= deadline:
                timed_out = True
                break
            if _has_exited(proc):
                exited_on_its_own = True
                if not pump.open:
                    break
                if drain_deadline is None:
                    drain_deadline = now + _DRAIN_WINDOW
                elif now >= drain_deadline:
                    stragglers = True
                    break
            wait = min(_POLL, deadline - now)
            if drain_deadline is not None:
                wait = min(wait, drain_deadline - now)
            pump.step(wait)
        if timed_out or interrupted or stragglers:
            exited_on_its_own = exited_on_its_own or _has_exited(proc)
            _kill_group(proc)
            pump.drain(_FINAL_DRAIN)
        elif not _ends_with_its_namespace(request.sandbox) and _left_running(proc):
            # The tool returned, but something it started in the background (`sleep 301 >/dev/null &`,
            # nohup) is still in its group: a tool call ends with the call. Only setsid escapes this.
            leftovers = True
            _kill_group(proc)
    except BaseException:
        # KeyboardInterrupt or a bug of ours: never leave the tree running behind us.
        _kill_group(proc)
        raise
    finally:
        pump.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    killed_by_us = (timed_out or interrupted) and not exited_on_its_own
    result = ProcessResult(
        exit_code=None if killed_by_us else proc.returncode,
        stdout=pump.out.text(),
        stderr=pump.err.text(),
        timed_out=timed_out,
        interrupted=interrupted,
        truncated=pump.out.truncated or pump.err.truncated,
        total_bytes=pump.out.total + pump.err.total,
        spill_path=pump.out.spill_path or pump.err.spill_path,
        duration=time.monotonic() - started,
        timeout=request.timeout,
        stragglers_killed=stragglers,
        # Past the cap the file stops but the pipe is still read (a build's error is in its last lines),
        # into the rolling tail only: a verbose tool is never stopped for its output, only by its timeout.
        saved_capped=pump.budget.exhausted,
        max_saved=request.max_saved,
        leftovers_killed=leftovers,
        stdout_truncated=pump.out.truncated,
        stdout_file=pump.out.spill_path if not pump.out.saved_cut else None,
    )
    result.sandbox_failure = classify_failure(request.sandbox, result, request.argv)
    return result


# -- long-running children: MCP servers --------------------------------------------------------------------

def start_server(argv: list[str], cwd: Path, env: dict[str, str], stderr: IO[bytes] | int, *,
                 sandbox: SandboxPlan | None) -> subprocess.Popen[bytes]:
    """Start a child nami talks to over its stdin and stdout while it runs (an MCP server), with the
    hygiene of tools: the complete environment given (scrubbed by :func:`child_environment`), its own
    session (no terminal; nami's Ctrl-C does not reach it; its process group can be killed whole), no other
    descriptor of ours, in its ``sandbox``. Raises OSError when it cannot start (PermissionError when the
    sandbox is required and not available)."""
    if sandbox is not None and sandbox.refusal is not None:
        raise PermissionError(sandbox.refusal)
    if sandbox is not None and sandbox.active and (missing := _start_problem(argv, cwd, env)) is not None:
        raise FileNotFoundError(missing[0])
    argv, keep = wrap(sandbox, argv, cwd)
    try:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, start_new_session=True, close_fds=True, pass_fds=keep)
    finally:
        close_all(keep)


def has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, leaving it unreaped (its pid still names its process group)."""
    return _has_exited(proc)


def stop_server(proc: subprocess.Popen[bytes], grace: float) -> int | None:
    """Close its stdin (how a stdio MCP server is asked to exit), give it ``grace`` seconds, then kill its
    process group, which also ends whatever it started and left behind; reap it. Returns its exit code."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()
    deadline = time.monotonic() + grace
    while not _has_exited(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    _kill_group(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    return proc.returncode


def exit_status(proc: subprocess.Popen[bytes]) -> int | None:
    """The exit code of a child that has exited, without reaping it (-N: ended by signal N); None while it
    runs."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (AttributeError, ChildProcessError):
        return proc.poll()
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
