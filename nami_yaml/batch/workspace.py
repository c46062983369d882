"""A task's own fresh workspace: an empty folder, a copy of a folder, or a fresh clone of a git repository
at a ref; then the task's setup commands in it. Commands go through the one subprocess path
(runners/process.py): own process group, deadline, capped output, scrubbed non-interactive environment."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.env_secrets import child_environment
from nami_yaml.runners.process import ProcessRequest, ProcessResult, run_process
from nami_yaml.runners.sandbox.plan import KIND_CHECK, SandboxPlan, plan_for
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxNeeds

COMMAND_OUTPUT = 4_000  # bytes of a setup or check command's output kept for the result's reason
_REMOTE = re.compile(r"^[\w.+-]+://|^[\w.-]+@[\w.-]+:")  # a URL, or scp-like user@host:path


class WorkspaceError(Exception):
    """The workspace could not be made (a folder missing, a clone or checkout failing)."""


@dataclass
class CommandRun:
    """How one setup or check command went, in words for the result."""

    command: str | list[str]
    result: ProcessResult

    @property
    def ok(self) -> bool:
        return self.result.ok

    def describe(self) -> str:
        shown = self.command if isinstance(self.command, str) else " ".join(self.command)
        result = self.result
        if result.timed_out:
            how = f"timed out after {result.timeout:g} s"
        elif result.interrupted:
            how = "stopped"
        else:
            how = f"exit code {result.exit_code}"
        output = result.format().strip()
        tail = output[-COMMAND_OUTPUT:] if output and output != "(no output)" else ""
        return f"`{shown}`: {how}" + (f"\n{tail}" if tail else "")


def command_env(context: RuntimeContext, task_env: Mapping[str, str]) -> dict[str, str]:
    """What setup and check commands run with: what the task's tools get (secrets scrubbed as the
    project's settings say, the model's key never, nothing interactive), plus the task's own ``env``."""
    return child_environment(context.host_env, extra=task_env, protected=context.protected_env,
                             scrub=context.env_scrub)


def command_sandbox(context: RuntimeContext, *, setup: bool) -> SandboxPlan:
    """The sandbox of a task's setup commands (the network: they install what the task needs) or check
    commands (the network of ``sandbox.network``, as the bash built-in): the task's workspace writable."""
    network = True if setup else context.sandbox.network
    return plan_for(context, SandboxNeeds(network=network), kind=KIND_CHECK)


def run_command(command: str | list[str], cwd: Path, env: Mapping[str, str], timeout: float,
                cancel: threading.Event | None = None, *, sandbox: SandboxPlan | None) -> CommandRun:
    """A string runs with ``bash -c``; a list is the argv itself."""
    argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
    request = ProcessRequest(argv=argv, cwd=cwd, env=dict(env), timeout=max(0.1, timeout),
                             max_output=COMMAND_OUTPUT, cancel=cancel, sandbox=sandbox)
    return CommandRun(command, run_process(request))


def make_workspace(task_id: str, spec: Any, base: Path, *, scratch: Path | None, env: Mapping[str, str],
                   timeout: float, cancel: threading.Event | None = None) -> Path:
    """A new folder for the task, filled as ``spec`` says (None: empty). Paths are relative to ``base``."""
    folder = Path(tempfile.mkdtemp(prefix=f"nami-task-{task_id}-", dir=scratch))
    try:
        if isinstance(spec, str):
            _copy(_local(spec, base), folder)
        elif isinstance(spec, Mapping) and "path" in spec:
            _copy(_local(spec["path"], base), folder)
        elif isinstance(spec, Mapping) and "git" in spec:
            _clone(spec["git"], spec.get("ref"), base, folder, env, timeout, cancel)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def is_remote(repository: str) -> bool:
    """A URL or ``user@host:path``, as opposed to a folder on this machine."""
    return bool(_REMOTE.match(repository))


def remove_workspace(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _local(path: str, base: Path) -> Path:
    target = Path(path).expanduser()
    return target if target.is_absolute() else base / target


def _copy(source: Path, folder: Path) -> None:
    if not source.is_dir():
        raise WorkspaceError(f"the workspace folder {source} does not exist")
    try:
        # Symlinks stay links: a link out of the folder must not pull the outside in.
        shutil.copytree(source, folder, symlinks=True, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"cannot copy the workspace folder {source}: {exc}") from None


def _clone(repository: str, ref: str | None, base: Path, folder: Path, env: Mapping[str, str], timeout: float,
           cancel: threading.Event | None) -> None:
    for what, value in (("repository", repository), ("ref", ref or "")):
        if value.startswith("-"):  # task files refuse these already
            raise WorkspaceError(f"the {what} {value!r} starts with '-': git would take it for an option")
    source = repository if is_remote(repository) else str(_local(repository, base))
    git_env = child_environment(env)
    # nami's own git, with fixed arguments, before any of the task runs: outside the sandbox (a private
    # repository needs the user's credentials), as nami's own work is.
    clone = run_command(["git", "clone", "--quiet", "--no-checkout", "--", source, str(folder)], folder.parent,
                        git_env, timeout, cancel, sandbox=None)
    if not clone.ok:
        raise WorkspaceError(f"cannot clone {repository}: {clone.describe()}")
    # A branch of the source other than its default exists in the clone only as origin/<branch>.
    tried = []
    for candidate in ([ref, f"origin/{ref}"] if ref else ["HEAD"]):
        checkout = run_command(["git", "checkout", "--quiet", "--detach", candidate], folder, git_env, timeout, cancel,
                               sandbox=None)
        if checkout.ok:
            return
        tried.append(checkout.describe())
    raise WorkspaceError(f"cannot check out {ref or 'HEAD'} of {repository}: {tried[0]}")
