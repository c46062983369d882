"""Trusting a task file before it runs commands on this machine.

A task file may come with a repository, like an agent.yaml: its ``setup:`` commands and ``command:`` checks
run with ``bash -c`` or as argv, and its ``env:`` reaches the agent's tools and those commands
(``BASH_ENV``, ``GIT_CONFIG_*``, ``LD_PRELOAD`` make a read-only tool run code). A task file that has any of
them is trusted as an agent.yaml is: a summary of what it runs, asked once, asked again after a change.
So is one whose ``workspace:`` copies or clones a folder outside the task file's own (``~/.ssh``,
``/etc``, a link in the repository that points there): the agent reads its workspace and the model sees
what it reads, so a task file must not choose which of your folders that is. The fingerprint covers the
bytes the tasks were read from and the folders copied for those tasks (``setup: [bash prep.sh]`` runs the
copy's ``prep.sh``). A task file of prompts and checks that run nothing, in folders of its own, needs no
trust. The trust is recorded in the trust store beside agent.yaml's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nami_yaml.app.project import Trust, TrustRequest, UntrustedProject
from nami_yaml.batch.workspace import is_remote
from nami_yaml.config.trust import TrustState, fingerprint, known_digest, remember
from nami_yaml.config.trust_diff import changes_since_trusted, shown
from nami_yaml.display import visible_line
from nami_yaml.paths import walk
from nami_yaml.spec.tasks import Task, TaskFile

MAX_SUMMARY_LINES = 400  # of commands; past that the file itself is the thing to read


class UntrustedTaskFile(UntrustedProject):
    def __init__(self, request: TrustRequest):
        super().__init__(request, f"{request.config} runs commands on this machine and {request.status} (setup:, "
                                  "command: checks, env:, or a workspace: from outside its folder). Read it, then "
                                  "run `nami batch run` on a terminal to be asked, or give --yes (for CI).")


def runs_commands(task: Task) -> bool:
    return bool(task.raw.get("setup") or task.raw.get("env") or any("command" in c for c in task.checks))


def reads_outside(task: Task) -> bool:
    """Whether the task's workspace starts as a copy (or a clone) of a folder of this machine outside the
    task file's folder, links followed."""
    local = _local_source(task)
    if local is None:
        return False
    target = Path(local).expanduser()
    target = (target if target.is_absolute() else task.base / target).resolve()
    return not target.is_relative_to(task.base.resolve())


def needs_trust(task: Task) -> bool:
    return runs_commands(task) or reads_outside(task)


def _local_source(task: Task) -> str | None:
    spec = task.raw.get("workspace")
    if isinstance(spec, str):
        return spec
    if not isinstance(spec, Mapping):
        return None
    if spec.get("path"):
        return str(spec["path"])
    repository = spec.get("git")
    return str(repository) if repository and not is_remote(str(repository)) else None


def copied_folders(task_file: TaskFile) -> list[Path]:
    """The local folders copied for the tasks that need trust (a clone's content is git's, not walked)."""
    folders: set[Path] = set()
    for task in task_file.tasks:
        spec = task.raw.get("workspace")
        path = spec if isinstance(spec, str) else spec.get("path") if isinstance(spec, Mapping) else None
        if needs_trust(task) and path:
            target = Path(path).expanduser()
            folders.add((target if target.is_absolute() else task.base / target).resolve())
    return sorted(folders)


def task_trust_state(task_file: TaskFile) -> TrustState | None:
    """Its trust state, or None when it runs no command (nothing to trust)."""
    if not any(needs_trust(task) for task in task_file.tasks):
        return None
    path = task_file.path.resolve()
    files = [file for folder in copied_folders(task_file) for file in walk(folder)]
    # The tasks' own bytes as they were read (not read again: what is trusted is what runs), then the copies.
    digest = hashlib.sha256(f"{task_file.digest}\0{fingerprint(files)}".encode()).hexdigest()
    return TrustState(path, digest, known_digest(path), [path, *files], [path])


def task_summary(task_file: TaskFile, state: TrustState | None = None) -> list[str]:
    """What a person reads before trusting it: every command and variable once (with the tasks that have
    it), the folders copied, and what changed since it was trusted. One screen line each."""
    path = task_file.path.resolve()
    used: dict[tuple[str, str], list[str]] = {}
    for task in task_file.tasks:
        for command in task.raw.get("setup") or []:
            used.setdefault(("setup", _shown(command)), []).append(task.id)
        for check in task.checks:
            if "command" in check:
                used.setdefault(("check", _shown(check["command"])), []).append(task.id)
        for name, value in (task.raw.get("env") or {}).items():
            used.setdefault(("env", f"{name}={value}"), []).append(task.id)
    lines = [f"task file: {path}",
             "  runs on this machine, in each task's workspace (a string with bash -c), before and after the agent;"
             " env: reaches the agent's tools too:"]
    for number, ((kind, what), ids) in enumerate(used.items()):
        if number == MAX_SUMMARY_LINES:
            lines.append(f"    … and {len(used) - number} more: read the file")
            break
        tasks = ", ".join(ids[:5]) + (f" … {len(ids)} tasks" if len(ids) > 5 else "")
        lines.append(f"    {kind:<6} {what}   ({tasks})")
    for folder in copied_folders(task_file):
        lines.append(f"  copies {folder} for them to run in, and the agent to read (its files are covered by this "
                     "trust)")
    remote = sorted({str(t.raw["workspace"]["git"]) for t in task_file.tasks if needs_trust(t)
                     and isinstance(t.raw.get("workspace"), Mapping) and "git" in t.raw["workspace"]})
    for repository in remote:
        where = "from the network" if is_remote(repository) else "a local repository"
        lines.append(f"  clones {repository} ({where}; what it holds is not covered: review the ref)")
    if state is not None and state.changed:
        changed = changes_since_trusted(path, state.files, state.texts)
        if changed:
            lines.append("  changed since you trusted it:")
            for label, group in (("added", changed.added), ("removed", changed.removed), ("modified", changed.modified)):
                lines.extend(f"    {label:<8} {shown(file, path.parent)}" for file in group)
            lines.extend(f"    {line}" for line in changed.diff)
    return [visible_line(line) for line in lines]


def _shown(command: Any) -> str:
    return command if isinstance(command, str) else " ".join(str(part) for part in command)


def ensure_task_file_trusted(task_file: TaskFile, trust: Trust) -> None:
    """Return when it runs nothing or is trusted (asked through ``trust``, see app.project.Trust, and then
    recorded); UntrustedTaskFile otherwise."""
    state = task_trust_state(task_file)
    if state is None or state.trusted or trust is True:
        return
    request = TrustRequest(state.config, state.changed, task_summary(task_file, state), kind="task file")
    if callable(trust) and trust(request):
        remember(state)
        return
    raise UntrustedTaskFile(request)
