"""A tool's ``plan:`` step: a command whose output is what a person approves before the tool runs
(``terraform plan -out {plan_file}`` then ``terraform show``; ``kubectl diff`` before ``kubectl apply``).

Each call of such a tool gets a :class:`PlanStep`: its plan (and show) command rendered like the tool's own
``command:`` and run through the one subprocess path, in the tool's own sandbox (its network, its target's
environment, what it declares it reads) and never with the call's ``writes:`` destinations, as a read would
run. ``{plan_file}`` is a file in a folder nami makes for the call (0700, under the temporary folder, which
the sandbox of any other tool call does not see): writable for the plan step, read-only for the show step and
the tool. What the person sees is the show step's output (else the plan step's); what the approval binds is
the SHA-256 of the plan file (else of that output, whole). The tool then runs only against the file with that
hash: a file changed after the approval refuses the call ("the plan changed").

The plan file itself is never what runs (Linux): once the plan step ended, nami copies it into a sealed
in-memory file (memfd_create, sealed against writing, growing and shrinking) and hashes the sealed bytes; the
show step and the tool get ``{plan_file}`` as ``/dev/fd/N`` of that copy (the descriptor inherited, through
bwrap too). Whoever writes, swaps or renames the file on disk after that (an unsandboxed process of the same
user) changes nothing the person saw or the tool reads; a file on disk that no longer has the planned hash
still refuses the call, as a sign that someone writes where they should not. (Without memfd, not Linux: the
file is hashed again just before the tool starts, which a same-user writer could race.)

When the step runs (app/guards.py): where the call is asked about, before the question, so the question shows
it; where it would run without a sandbox (sandbox.mode off, no bubblewrap), only after a person approved
running it (a question of its own, :meth:`PlanStep.unsandboxed`). A call that is not asked about (a rule
allows it, ``--yes``) does not run a plan that only shows (``kubectl diff``); a plan whose file the tool's
command reads runs just before the tool, unshown.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shlex
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nami_yaml.result import ToolResult
from nami_yaml.runners.base import ProcessInvocation
from nami_yaml.runners.sandbox.plan import SandboxPlan

PLAN_FILE = "plan_file"  # the placeholder of the call's plan file: {plan_file}
PLAN_FILE_NAME = "plan"
SOURCE = "plan step"  # who refuses a call whose plan step failed (its decision's source)
MAX_STDERR_SHOWN = 4000  # characters of a failed plan step's stderr told to the model
# A plan file's copy is sealed: nothing (nami included) can write, grow or shrink it, nor unseal it.
SEALING = hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS")
_SEALS = sum(getattr(fcntl, name, 0) for name in ("F_SEAL_WRITE", "F_SEAL_GROW", "F_SEAL_SHRINK", "F_SEAL_SEAL"))


@dataclass(frozen=True)
class PlanSpec:
    """``plan:`` as the tool file declares it: the plan command's argv template, the show command's (None:
    the plan's own stdout is shown), its timeout (None: the tool's), and the exit codes that mean it planned
    (``kubectl diff`` exits 1 when there are differences)."""

    command: tuple[Any, ...]
    show: tuple[Any, ...] | None = None
    timeout: float | None = None
    exit_codes: tuple[int, ...] = (0,)


@dataclass
class PlanOutcome:
    """How a plan step ended: what is shown, the hash an approval binds, or why it failed."""

    ok: bool
    shown: str = ""  # the show step's stdout (else the plan step's), cut as a tool's output is
    sha256: str | None = None  # of the plan file, else of the whole shown output (bound with ``inputs``)
    failure: str | None = None  # said to the model when the step failed (the tool is not run)
    saved: str | None = None  # where the whole output is, when ``shown`` is cut
    # A plan without a file: the hash of the files its argv and the tool's name; the approval binds both.
    inputs: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "sha256": self.sha256, "failure": self.failure, "saved": self.saved}


def hash_file(path: Path) -> str | None:
    """The SHA-256 of the regular file at ``path`` (never through a link); None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sealed_copy(path: Path) -> tuple[int, str] | str:
    """A sealed in-memory copy of the regular file at ``path`` (never through a link): its descriptor and the
    SHA-256 of the sealed bytes; or why there is none. What is hashed is what is read later through the
    descriptor, whatever is written at ``path`` meanwhile."""
    try:
        source = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"it cannot be opened: {exc.strerror or exc}"
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):
            return "it is not a regular file"
        copy = os.memfd_create("nami-plan", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            while chunk := os.read(source, 1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(copy, view):]
            fcntl.fcntl(copy, fcntl.F_ADD_SEALS, _SEALS)
            return copy, _sha256_of_fd(copy)
        except OSError:
            os.close(copy)
            raise
    except OSError as exc:
        return f"it cannot be copied and sealed: {exc.strerror or exc}"
    finally:
        os.close(source)


def _sha256_of_fd(fd: int) -> str:
    digest, offset = hashlib.sha256(), 0
    while chunk := os.pread(fd, 1 << 20, offset):
        digest.update(chunk)
        offset += len(chunk)
    return digest.hexdigest()


MAX_INPUT_FILES = 2000  # files of the folders a diff plan's argv names, hashed (more: the plan fails)


def inputs_digest(argv: list[str], cwd: Path) -> str | None:
    """The SHA-256 of every file an argv names (an element, or an ``--opt=VALUE``'s value, that is an
    existing file or folder, relative to ``cwd``; a folder's files recursively): for a plan without a file
    (``kubectl diff -f manifests/``) what its output showed the differences of, so a manifest edited after
    the question changes what the approval binds. None past MAX_INPUT_FILES (too many to bind)."""
    digest = hashlib.sha256()
    count = 0
    for arg in argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value or value.startswith("-"):
            continue
        path = Path(value) if os.path.isabs(value) else cwd / value
        try:
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        except OSError:
            files = []
        for file in files:
            count += 1
            if count > MAX_INPUT_FILES:
                return None
            digest.update(f"{file}\0{hash_file(file) or '-'}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def plan_folder() -> Path:
    """A path for one call's plan folder, made only when its plan step runs (os.mkdir: never one that exists)."""
    return Path(tempfile.gettempdir()) / f"nami-plan-{secrets.token_hex(12)}"


def reading(plan: SandboxPlan, folder: Path) -> SandboxPlan:
    """``plan`` with ``folder`` shown read-only (it lies under the sandbox's private /tmp)."""
    return replace(plan, reads=(*plan.reads, folder)) if plan.active else plan


@dataclass
class PlanStep:
    """One call's plan step: its processes, its folder, and (once run) its outcome."""

    spec: PlanSpec
    plan: ProcessInvocation
    show: ProcessInvocation | None
    folder: Path | None  # None: the plan writes no file
    needed: bool  # the tool's command reads {plan_file}: the step runs before it even when nobody was asked
    tool_argv: tuple[str, ...] = ()  # the tool's own argv: the files it names are bound with a plan without a file
    outcome: PlanOutcome | None = None
    # Who approved running the plan step without a sandbox (app/guards.py), for the audit line.
    approved: str | None = None
    # The sealed copy of the plan file (sealed_copy) the show step and the tool read; None before planning.
    sealed: int | None = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def file(self) -> Path | None:
        return None if self.folder is None else self.folder / PLAN_FILE_NAME

    def describe(self) -> dict[str, Any]:
        """For the call's plan (dry runs, the audit log, approvals): what runs and, once run, its hash."""
        entry: dict[str, Any] = {"argv": self.plan.argv}
        if self.show is not None:
            entry["show"] = self.show.argv
        if self.file is not None:
            entry["file"] = str(self.file)
        entry["needed"] = self.needed
        if self.outcome is not None:
            entry["sha256"] = self.outcome.sha256
            entry["ok"] = self.outcome.ok
            entry["sealed"] = self.sealed is not None
        if self.approved is not None:
            entry["approved"] = self.approved
        return entry

    def unsandboxed(self) -> str | None:
        """Why the plan step (or its show step) would run without a sandbox (sandbox.mode off, no bubblewrap
        here): it would run what the call's folder configures (terraform's providers and ``data "external"``
        programs) with the user's rights, so it must not run before a person approved it. None where both run
        sandboxed (or are refused to start: a required sandbox that is missing)."""
        for invocation in (self.plan, self.show):
            sandbox = invocation.sandbox if invocation is not None else None
            if sandbox is not None and not sandbox.active and sandbox.refusal is None:
                return sandbox.reason or "no sandbox"
        return None

    def reading_sealed(self, invocation: ProcessInvocation) -> ProcessInvocation:
        """``invocation`` reading the sealed copy of the plan file: where its argv names the file, it names
        ``/dev/fd/N`` of the copy instead, and inherits that descriptor. As it is before planning (or without
        memfd)."""
        if self.sealed is None or self.file is None:
            return invocation
        path, copy = str(self.file), f"/dev/fd/{self.sealed}"
        return replace(invocation, argv=[part.replace(path, copy) for part in invocation.argv],
                       pass_fds=(*invocation.pass_fds, self.sealed))

    def command_line(self) -> str:
        """The plan step as one line: ``terraform plan -out F, then terraform show F``."""
        text = shlex.join(self.plan.argv)
        return text + (f", then {shlex.join(self.show.argv)}" if self.show is not None else "")

    def digest_now(self) -> str | None:
        """The hash the approval is compared with: the plan file's as it is now (a file plan), else the hash
        of the output that was shown; None before the step ran."""
        if self.outcome is None or not self.outcome.ok:
            return None
        if self.file is not None:
            return hash_file(self.file)
        return _bound(self.outcome.sha256, self._inputs())

    def _inputs(self) -> str | None:
        return inputs_digest([*self.plan.argv, *self.tool_argv[1:]], Path(self.plan.cwd))

    def run(self, *, show: bool = True) -> PlanOutcome:
        """Run the plan step (once: a second call returns the same outcome). ``show``: also its show step."""
        with self._lock:
            if self.outcome is None:
                self.outcome = self._run(show)
            return self.outcome

    def _run(self, show: bool) -> PlanOutcome:
        if self.folder is not None:
            try:
                os.mkdir(self.folder, 0o700)
            except OSError as exc:
                return PlanOutcome(False, failure=f"the plan step was not run: its folder {self.folder} cannot be "
                                                  f"made ({exc.strerror or exc})")
        inputs = None
        if self.file is None:
            inputs = self._inputs()  # taken before the plan reads them: a change while it runs is a change
            if inputs is None:
                return PlanOutcome(False, failure=f"the plan step ({shlex.join(self.plan.argv)}) was not run: its "
                                                  f"command names more than {MAX_INPUT_FILES:,} files, too many to "
                                                  "bind an approval to")
        planned = self.plan.run()
        problem = self._failure(planned, self.plan, "plan step")
        if problem:
            return PlanOutcome(False, failure=problem)
        sha256: str | None = None
        if self.file is not None:
            sha256, why = self._seal()
            if sha256 is None:
                return PlanOutcome(False, failure=f"the plan step ({shlex.join(self.plan.argv)}) wrote no plan file "
                                                  f"at {self.file} ({why}); nothing was run")
            os.chmod(self.file, 0o400)  # nothing needs to write it now (what runs is the sealed copy)
        shown_by = planned
        if self.show is not None and show:
            shown_by = self.reading_sealed(self.show).run()
            problem = self._failure(shown_by, self.show, "plan's show step", codes=(0,))
            if problem:
                return PlanOutcome(False, failure=problem)
        elif self.show is not None:
            return PlanOutcome(True, shown="", sha256=sha256)
        text, saved, whole = _stdout(shown_by)
        if sha256 is None:
            return PlanOutcome(True, shown=text, sha256=hashlib.sha256(whole).hexdigest(), saved=saved, inputs=inputs)
        return PlanOutcome(True, shown=text, sha256=sha256, saved=saved)

    def _seal(self) -> tuple[str | None, str]:
        """The plan file's hash, taken of its sealed copy (kept in ``sealed``) where memfd exists, else of the
        file itself; (None, why) when there is none."""
        assert self.file is not None
        if not SEALING:
            sha256 = hash_file(self.file)
            return sha256, "" if sha256 else "it is not a regular file there"
        made = sealed_copy(self.file)
        if isinstance(made, str):
            return None, made
        self.sealed, sha256 = made
        return sha256, ""

    def _failure(self, result: ToolResult, invocation: ProcessInvocation, what: str,
                 codes: tuple[int, ...] | None = None) -> str | None:
        details = result.details
        code = details.get("exit_code")
        if code in (codes or self.spec.exit_codes) and not details.get("timed_out") \
                and not details.get("interrupted") and "sandbox_failure" not in details:
            return None
        if details.get("timed_out"):
            how = f"timed out after {invocation.timeout:g}s"
        elif details.get("interrupted"):
            how = "was interrupted"
        elif code is None:
            how = "could not run"
        else:
            how = f"exited with {code}"
        stderr = (result.streams.stderr if result.streams is not None else result.content).strip()
        if len(stderr) > MAX_STDERR_SHOWN:
            stderr = stderr[:MAX_STDERR_SHOWN] + "\n… (cut)"
        said = f"\n[stderr]\n{stderr}" if stderr else ""
        if not stderr and result.streams is None:
            said = f"\n{result.content.strip()}"
        return f"the {what} ({shlex.join(invocation.argv)}) {how}, so the tool was not run{said}"

    def ready(self) -> str | None:
        """Just before the tool runs: None when it may run against the plan, else why not. A plan the tool's
        command reads is run now where nobody was asked; its file must be the one whose hash was taken."""
        if self.outcome is None:
            if not self.needed:
                return None  # a plan only for showing, and nobody was asked: nothing to check
            self.run(show=False)
        outcome = self.outcome
        assert outcome is not None
        if not outcome.ok:
            return outcome.failure or "the plan step failed"
        if self.file is not None:
            now = hash_file(self.file)
            if now != outcome.sha256:
                state = "is gone" if now is None else f"now has sha256 {now[:12]}…"
                return (f"the plan changed: the plan file {self.file} is not the one planned (sha256 "
                        f"{(outcome.sha256 or '')[:12]}…; it {state}), so the tool was not run; call it again to plan "
                        "and ask anew")
        elif outcome.inputs is not None and self._inputs() != outcome.inputs:
            return ("the plan changed: a file its command names (or the tool's) changed since the plan was shown, "
                    "so the tool was not run; call it again to plan and ask anew")
        return None

    def discard(self) -> None:
        """Remove the call's plan folder (after its call ended); a later run plans anew."""
        with self._lock:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
            if self.sealed is not None:
                with contextlib.suppress(OSError):
                    os.close(self.sealed)
                self.sealed = None
            self.outcome = None
            self.approved = None


def _bound(output: str | None, inputs: str | None) -> str | None:
    """What an approval of a plan without a file binds: its whole output and the files it named."""
    if output is None or inputs is None:
        return output
    return hashlib.sha256(f"{output}\0{inputs}".encode("ascii")).hexdigest()


def _stdout(result: ToolResult) -> tuple[str, str | None, bytes]:
    """The text shown, where the whole of it is saved when it was cut, and the whole text's bytes."""
    stdout = result.streams.stdout if result.streams is not None else result.content
    spill = result.details.get("spill_path")
    whole = stdout.encode("utf-8", "surrogatepass")
    if result.details.get("truncated") and spill:
        with contextlib.suppress(OSError):  # gone: the part kept is hashed
            whole = Path(spill).read_bytes()
        return stdout, str(spill), whole
    return stdout, None, whole


@dataclass
class PlannedInvocation(ProcessInvocation):
    """A ``command:`` call of a tool with ``plan:``: its plan step runs first (where it is asked about,
    before the question), and it runs only against exactly the plan that step made."""

    step: PlanStep | None = None

    def plan(self) -> dict[str, Any]:
        plan = super().plan()
        if self.step is not None:
            plan["plan_step"] = self.step.describe()
        return plan

    def run(self) -> ToolResult:
        step = self.step
        if step is None:
            return super().run()
        ran_here = step.outcome is None and step.needed
        refused = step.ready()
        if refused is not None:
            if ran_here:
                step.discard()
            return ToolResult.error(refused, plan_step=step.describe(), not_run="plan")
        sha256 = step.outcome.sha256 if step.outcome is not None else None
        try:
            # The tool reads the sealed copy that was hashed (and shown), never the file by its path.
            result = ProcessInvocation.run(step.reading_sealed(self))
        finally:
            if ran_here:  # planned for this run alone: nobody saw it, nothing else uses it
                step.discard()
        if sha256:
            result.details["plan_sha256"] = sha256
        return result
