"""A job: one task and everything a worker needs to run it, as plain JSON data. It is what travels to a
worker process (on its stdin) or to a Ray node (as a task argument); nothing else is shared with it."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from nami_yaml.batch.workspace import is_remote
from nami_yaml.project_request import ProjectRequest

DEFAULT_WALL_TIME = 1800.0  # seconds for a task that sets no limits.wall_time (and no --wall-time is given)


@dataclass(frozen=True)
class Job:
    task: dict[str, Any]  # as written in the task file
    base: str  # the folder the task's paths (workspace) are relative to
    project: ProjectRequest  # where the agent comes from (its cwd and paths absolute, or relative on a Ray node)
    approve_risks: tuple[str, ...] = ()
    wall_time: float = DEFAULT_WALL_TIME  # when the task sets none
    env: dict[str, str] = field(default_factory=dict)  # added to the worker's environment
    keep_workspace: bool = False
    scratch: str | None = None  # where task workspaces are made (None: the system's temporary folder)
    bring_back: bool = False  # return the session file and audit lines with the result (other machines)
    trace: dict[str, str] = field(default_factory=dict)  # traced batches: its context, which the task's trace links to

    @property
    def task_id(self) -> str:
        return str(self.task["id"])

    @property
    def task_wall_time(self) -> float:
        limit = (self.task.get("limits") or {}).get("wall_time")
        return float(limit) if limit is not None else float(self.wall_time)

    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, project=None))
        data["approve_risks"] = list(self.approve_risks)
        data["project"] = self.project.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        return cls(**{**data, "project": ProjectRequest.from_json(data["project"]),
                      "approve_risks": tuple(data.get("approve_risks") or ())})

    def relative_to(self, root: Path) -> Job:
        """The same job with its local paths relative to ``root`` (the folder shipped to other machines).
        ValueError names the first path outside it."""
        def inside(path: str | None, what: str) -> str | None:
            if path is None:
                return None
            absolute = Path(path).resolve()
            if not absolute.is_relative_to(root):
                raise ValueError(f"{what} {absolute} is outside {root}")
            return str(absolute.relative_to(root))

        project = self.project
        moved = replace(project, cwd=Path(inside(str(project.folder), "the project folder") or "."),
                        config=inside(project.config, "the agent.yaml"),
                        tools=tuple(inside(t, "the tool path") or t for t in project.tools))
        return replace(self, base=inside(self.base, "the task file's folder") or ".", project=moved,
                       task=_task_paths_relative(self.task, Path(self.base), inside))

    def resolved(self, cwd: Path) -> Job:
        """Relative local paths made absolute against ``cwd`` (where a Ray node unpacked the project)."""
        def absolute(path: str | None) -> str | None:
            return None if path is None else str(path if os.path.isabs(path) else cwd / path)

        project = self.project
        moved = replace(project, cwd=Path(absolute(None if project.cwd is None else str(project.cwd)) or cwd),
                        config=absolute(project.config),
                        tools=tuple(absolute(t) or t for t in project.tools))
        return replace(self, base=absolute(self.base) or str(cwd), project=moved)


def _task_paths_relative(task: dict[str, Any], base: Path, inside: Any) -> dict[str, Any]:
    """A local workspace folder or repository must be shipped too: it must be inside the root. A path
    relative to the task file's folder stays as written (that folder is shipped with it); an absolute one
    is rewritten relative to it."""
    workspace = task.get("workspace")
    key = None
    if isinstance(workspace, str):
        local = workspace
    elif isinstance(workspace, dict) and "path" in workspace:
        key, local = "path", workspace["path"]
    elif isinstance(workspace, dict) and not is_remote(workspace.get("git", "")):
        key, local = "git", workspace["git"]
    else:
        return task
    target = Path(local).expanduser()
    absolute = target if target.is_absolute() else base / target
    inside(str(absolute), f"task {task['id']}'s workspace")
    if not target.is_absolute():
        return task
    relative = os.path.relpath(absolute.resolve(), base.resolve())
    return {**task, "workspace": relative if key is None else {**workspace, key: relative}}
