"""What one call may not change for later ones, looked at again after each call that could write.

The sandbox binds protected paths read-only in place, so a call cannot change them by any path. But some
files count only when they are there: a new ``.git/commondir`` or ``config.worktree``, a submodule's ``.git``
file, a whole new repository made by ``git init``; and a project whose tool files sit at its root cannot
have all of its root read-only. So after each call that ran something able to write, nami looks again,
cheaply (a file's identity: device, inode, size, times; the bytes only of git's small control files):

- **git**: a control file (``config``, ``config.worktree``, ``commondir``, ``hooks/*``, the same of every
  worktree and submodule, and every ``.git`` entry in the workspace) that a sandboxed call created is moved
  aside (``NAME.nami-moved``), and one it changed or removed is put back as it was, the changed one kept
  aside. Nothing is lost, and git keeps working (it needs none of them). Git runs these files later, outside
  any sandbox (the person's own ``git status`` runs ``core.fsmonitor``). After a call that ran unsandboxed (a
  person's yes, or ``sandbox.mode: off``) they are only reported.
- **code**: a file a project tool runs (what trust covers: its tool folder, the files its command line
  names; for a Python program below ``exec``, what it imports from its working folder) that changed makes
  that tool's next call an exec call, asked as one and saying what changed (``CodeWrites`` decides it, so no
  rule allowing the tool lets it through). A yes accepts the change for the rest of the session.

Reading only: the check never runs what it finds. Limits (docs/security.md): folders nami never walks
(``node_modules``, virtual environments) and more than ``MAX_FOLDERS`` folders are not searched for new
``.git`` entries.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nami_yaml.agent.hooks import CallRecord
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.git_index import pointed, repository_entry, submodule_paths
from nami_yaml.paths import SKIPPED_FOLDERS, Resolver

if TYPE_CHECKING:
    from nami_yaml.app.project import Project

Identity = tuple[int, int, int, int, int, int]  # device, inode, mode, size, mtime, ctime (ns)

GIT_FILES = ("config", "config.worktree", "commondir", "gitdir")
BARE_LAYOUT = frozenset({"HEAD", "objects", "refs"})  # what makes git take a folder for a git directory
MOVED = ".nami-moved"
MAX_FOLDERS = 20_000  # the workspace's folders searched for new .git entries after a call
MAX_KEPT_BYTES = 256 * 1024  # a control file up to this size is kept, to be put back if a call changes it
IMPORTABLE = (".py", ".pyc", ".so", ".pyd")
# In a folder a tool's command line runs code from (beside `python3 -m mytool`, `./scripts/x`), what counts
# as its code mid-session: what an interpreter loads, or an executable. (Trust, at the next start, counts
# every file there; this check runs after every call and must not ask about each note the model writes.)
CODE_SUFFIXES = (*IMPORTABLE, ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua")


def identity(path: Path) -> Identity | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _same(before: os.stat_result, now: os.stat_result) -> bool:
    """The same folder with the same entries: an entry added, removed or renamed changes its times."""
    return (before.st_ino == now.st_ino and before.st_dev == now.st_dev and before.st_mtime_ns == now.st_mtime_ns
            and before.st_ctime_ns == now.st_ctime_ns)


# -- git ------------------------------------------------------------------------------------------------


def control_files(git_entries: Iterable[Path]) -> set[Path]:
    """Every file git reads as instructions, of the repositories behind ``git_entries`` (each a ``.git``
    folder, or a ``.git`` file: then it and what it points to): config, hooks, worktrees', submodules'."""
    found: set[Path] = set()
    seen: set[Path] = set()
    queue: list[Path] = []
    for entry in git_entries:
        if os.path.islink(entry) or not entry.is_dir():
            found.add(entry)  # a .git file or link: where git goes; a .git folder changes with every commit
            target = pointed(entry) if not os.path.islink(entry) else entry.resolve()
            if target is not None:
                queue.append(target)
        else:
            queue.append(entry)
    while queue:
        gitdir = queue.pop()
        if gitdir in seen or len(seen) > 512 or not gitdir.is_dir():
            continue
        seen.add(gitdir)
        found.update(gitdir / name for name in GIT_FILES)
        with contextlib.suppress(OSError):
            found.update(hook for hook in (gitdir / "hooks").iterdir() if not hook.name.endswith(".sample"))
        hooks_path = _hooks_path(gitdir)
        if hooks_path is not None:  # core.hooksPath (husky's .husky/_): those hooks run as .git/hooks' do
            with contextlib.suppress(OSError):
                found.update(hook for hook in hooks_path.iterdir() if not hook.name.endswith(".sample"))
        common = gitdir / "commondir"
        if common.is_file() and (target := pointed(common)) is not None:
            queue.append(target)
        for nested in ("worktrees", "modules"):
            with contextlib.suppress(OSError):
                queue.extend(child for child in (gitdir / nested).iterdir() if child.is_dir())
        # A submodule's folder may itself hold its submodules (modules/a/modules/b), and its name any
        # folder name: a folder of modules/ that is not itself a repository is a path to one.
    return found


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.+?)\s*$", re.I | re.M)


def _hooks_path(gitdir: Path) -> Path | None:
    """The folder ``core.hooksPath`` of a repository's config names (relative: to its work tree), if any."""
    try:
        text = (gitdir / "config").read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        return None
    match = _HOOKS_PATH.search(text)
    if match is None:
        return None
    value = os.path.expanduser(match.group(1).strip('"'))
    base = gitdir.parent if gitdir.name == ".git" else gitdir
    return Path(value) if os.path.isabs(value) else (base / value)


class FolderIndex:
    """The workspace's folders, listed once and listed again only where a folder's identity changed
    (an entry added, removed or renamed changes its times): where ``.git`` entries are."""

    def __init__(self, root: Path):
        self.root = str(root)
        # Folders as strings: this runs after every call, and pathlib's objects cost more than the lstat.
        self._folders: dict[str, tuple[os.stat_result | None, tuple[str, ...], bool]] = {}
        self.complete = True

    def git_entries(self) -> set[Path]:
        found: set[Path] = set()
        listed: dict[str, tuple[os.stat_result | None, tuple[str, ...], bool]] = {}
        pending = [self.root]
        self.complete = True
        while pending:
            folder = pending.pop()
            if len(listed) >= MAX_FOLDERS:
                self.complete = False
                break
            try:
                now: os.stat_result | None = os.lstat(folder)
            except OSError:
                now = None
            known = self._folders.get(folder)
            if known is not None and known[0] is not None and now is not None and _same(known[0], now):
                subfolders, has_git = known[1], known[2]
            else:
                subfolders, has_git = self._list(folder)
            listed[folder] = (now, subfolders, has_git)
            if has_git:
                # A .git, or a folder laid out as a git directory (HEAD, objects/, refs/): the person's own git
                # takes that for a repository (safe.bareRepository defaults to all) and obeys its config.
                found.add(Path(folder, ".git") if os.path.lexists(os.path.join(folder, ".git")) else Path(folder))
            pending.extend(os.path.join(folder, name) for name in subfolders)
        self._folders = listed
        return found

    @staticmethod
    def _list(folder: str) -> tuple[tuple[str, ...], bool]:
        subfolders: list[str] = []
        has_git = False
        names: set[str] = set()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    names.add(entry.name)
                    if entry.name == ".git":
                        has_git = True
                    elif entry.name not in SKIPPED_FOLDERS and entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.name)
        except OSError:
            pass
        return tuple(subfolders), has_git or names >= BARE_LAYOUT


@dataclass(frozen=True)
class Kept:
    """A control file as it was before the session's calls: its identity, and its bytes where small."""

    identity: Identity | None
    data: bytes | None = None


def _keep(path: Path) -> Kept:
    now = identity(path)
    data = None
    if now is not None and stat.S_ISREG(now[2]) and now[3] <= MAX_KEPT_BYTES:
        with contextlib.suppress(OSError):
            data = path.read_bytes()
    return Kept(now, data)


def _aside(path: Path) -> Path:
    """A free name beside ``path`` to move it to."""
    candidate = path.with_name(path.name + MOVED)
    number = 1
    while os.path.lexists(candidate):
        number += 1
        candidate = path.with_name(f"{path.name}{MOVED}-{number}")
    return candidate


def _put_back(path: Path, data: bytes, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.nami-{os.getpid()}.tmp")
    with open(temporary, "xb") as out:
        out.write(data)
    os.chmod(temporary, stat.S_IMODE(mode))
    os.replace(temporary, path)


# -- the watch ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCode:
    """What one project tool runs: folders walked whole, files, and folders it imports from at their top."""

    folders: tuple[Path, ...] = ()  # its tool file's folder: every file counts
    files: tuple[Path, ...] = ()
    imports: tuple[Path, ...] = ()
    code_folders: tuple[Path, ...] = ()  # folders its command line runs code from: code files count

    def runs(self, path: Path, mode: int | None = None) -> bool:
        if path in self.files or any(path.is_relative_to(folder) for folder in self.folders):
            return True
        if any(path.is_relative_to(folder) for folder in self.code_folders) and (
                path.suffix in CODE_SUFFIXES or (mode is not None and mode & 0o111)):
            return True
        top = path.parent.parent if path.name == "__init__.py" else path.parent
        return top in self.imports and (path.suffix in IMPORTABLE)


def importables(folder: Path) -> list[Path]:
    """What Python imports from ``folder`` when it is first on its path: modules and packages at its top."""
    found: list[Path] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    if os.path.lexists(path / "__init__.py"):
                        found.append(path / "__init__.py")
                elif entry.name.endswith(IMPORTABLE):
                    found.append(path)
    except OSError:
        pass
    return found


@dataclass(frozen=True)
class WatchedProject:
    """What the watch needs of a project, listed once by whoever opened it (``watched_project``)."""

    workspace: Path
    code: Callable[[], list[Path]]  # every file trust covers, walked now
    tools: Mapping[str, ToolCode]  # each project tool's code
    import_folders: tuple[Path, ...] = ()  # folders Python tools import from (their top only)
    code_folders: tuple[Path, ...] = ()  # the folders ``code`` walks: a file added there changes one of them


Report = Callable[[str], None]


class ChangeWatch:
    """One per project and process (``watch_for``), shared by its agents, sub-agents and MCP clients: the
    state before their calls, checked after each call that could write."""

    def __init__(self, project: WatchedProject):
        self.project = project
        self._lock = threading.Lock()
        self._folders = FolderIndex(project.workspace)
        self._index_seen: Identity | None = None
        self._links: set[Path] = set()
        self._git = {path: _keep(path) for path in self._git_files()}
        self._folders_below: list[Path] | None = None  # the folders trust walks, listed once
        self._folder_state: dict[Path, Identity | None] | None = None
        self._code_files: set[Path] = set()
        self._code = self._code_state()
        self.changed: dict[Path, Identity | None] = {}  # code changed since, not yet accepted by a person
        self._asked: dict[str, dict[Path, Identity | None]] = {}  # a marked call's key -> what it was asked

    # -- looking ----------------------------------------------------------------------------------------

    def _git_files(self) -> set[Path]:
        entries = self._folders.git_entries()
        outer = repository_entry(self.project.workspace)
        if outer is not None:
            entries.add(outer)
            # A submodule the index names may sit where the folder walk does not go (node_modules): its
            # .git is watched wherever the index puts it (the index is writable in the sandbox).
            entries.update(self._gitlinks(outer))
        return control_files(entries)

    def _gitlinks(self, git: Path) -> set[Path]:
        index = git / "index"
        now = identity(index)
        if now != self._index_seen:
            self._index_seen = now
            self._links = {git.parent / path / ".git" for path in submodule_paths(git)} if now else set()
        return self._links

    def _code_state(self) -> dict[Path, Identity | None]:
        """Each covered file's identity. The walk is done again only where a folder changed (a file added,
        removed or renamed changes its folder's times): after most calls, one lstat per file and folder."""
        folders = {folder: identity(folder) for folder in self._walked_folders()}
        if self._folder_state != folders:
            self._folder_state = folders
            self._code_files = set(self.project.code())
        files = set(self._code_files)
        for folder in self.project.import_folders:
            files.update(importables(folder))
        return {file: identity(file) for file in files}

    def _walked_folders(self) -> list[Path]:
        if self._folders_below is None:
            below: list[Path] = []
            for top in self.project.code_folders:
                for root, dirs, _ in os.walk(top):
                    dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
                    below.append(Path(root))
            self._folders_below = below
        return self._folders_below

    def after_call(self, record: CallRecord, report: Report | None = None) -> None:
        """After a call that ran: look again, undo what git would run, and say what was found."""
        call = record.prepared
        if call is None or record.started is None or not _could_write(call):
            return
        plan = getattr(call, "sandbox_plan", None)
        active = plan() if plan is not None else None
        sandboxed = active is not None and active.active
        with self._lock:
            messages = self._check_git(sandboxed, call.name)
            messages += self._check_code(call.name)
            self._accept(record)
        if report is not None:
            for message in messages:
                report(message)

    def _check_git(self, undo: bool, tool: str) -> list[str]:
        complete_before = self._folders.complete
        now = self._git_files() | set(self._git)
        messages: list[str] = []
        if complete_before and not self._folders.complete:
            # Folders past the limit could hide a planted .git: say so rather than pass in silence.
            messages.append(f"after {tool} the workspace holds more than {MAX_FOLDERS:,} folders: nami did not "
                            "look in all of them for a .git a call may have planted (find . -name .git)")
        for path in sorted(now):
            kept = self._git.get(path, Kept(None))
            current = identity(path)
            if current == kept.identity:
                continue
            if kept.identity is not None and current is not None and kept.data is not None:
                with contextlib.suppress(OSError):
                    if stat.S_ISREG(current[2]) and path.read_bytes() == kept.data:
                        self._git[path] = Kept(current, kept.data)  # touched, not changed
                        continue
            what = "made" if kept.identity is None else "removed" if current is None else "changed"
            if not undo or not path.is_relative_to(self.project.workspace):
                # Unsandboxed (a person's yes), or outside the workspace where no sandboxed call writes.
                messages.append(f"{tool} {what} {path}, which git reads as instructions: nami leaves it (the "
                                "call ran unsandboxed); review it before you next run git here")
                self._git[path] = _keep(path)
                continue
            messages.append(self._undo(path, kept, current, what, tool))
        return messages

    @staticmethod
    def _undo(path: Path, kept: Kept, current: Identity | None, what: str, tool: str) -> str:
        why = "git reads it as instructions, and a call may not change what later runs"
        try:
            moved = None
            if current is not None:
                moved = _aside(path)
                os.rename(path, moved)
            if kept.identity is not None and kept.data is not None:
                _put_back(path, kept.data, kept.identity[2])
                return (f"{tool} {what} {path}; {why}: nami put it back as it was"
                        + (f" (the changed one is {moved})" if moved else ""))
            if moved is not None:
                return f"{tool} {what} {path}; {why}: nami moved it to {moved}"
            return f"{tool} {what} {path}; {why}; nami kept no copy to put back"
        except OSError as exc:
            return f"{tool} {what} {path}; {why}; nami could not undo it ({exc.strerror}): remove it yourself"

    def _check_code(self, tool: str) -> list[str]:
        now = self._code_state()
        messages: list[str] = []
        for path in sorted(set(now) | set(self._code)):
            before, current = self._code.get(path), now.get(path)
            if before == current or self.changed.get(path, before) == current:
                continue
            self.changed[path] = current
            mode = current[2] if current is not None else None
            users = sorted(name for name, code in self.project.tools.items() if code.runs(path, mode))
            if users:  # (any other file trust covers: trust asks again at the project's next start)
                what = "made" if before is None else "removed" if current is None else "changed"
                messages.append(f"{tool} {what} {path}, which {', '.join(users[:3])} "
                                f"run{'s' if len(users) == 1 else ''}: asked about as an exec call from now on")
        return messages

    # -- deciding ---------------------------------------------------------------------------------------

    def changed_for(self, name: str) -> list[Path]:
        """The files the code of ``name`` (a tool, or a hook: ``hook SOURCE``) runs that changed since the
        session started and no person accepted."""
        code = self.project.tools.get(name)
        if code is None or not self.changed:
            return []
        with self._lock:
            return [path for path, seen in self.changed.items() if code.runs(path, seen[2] if seen else None)]

    def mark(self, call: PreparedCall) -> PreparedCall:
        """Just before a call is decided (after every call before it ran and was looked at): the call of a
        tool whose code changed during the session becomes an exec call saying what changed. In place: the
        loop, the asker and the audit log all see the call as it was decided."""
        code = self.project.tools.get(call.name)
        if code is None or not self.changed or not hasattr(call, "risk_reason"):
            return call
        with self._lock:
            changed = {path: seen for path, seen in self.changed.items()
                       if code.runs(path, seen[2] if seen is not None else None)}
        if not changed:
            return call
        names = [str(path) for path in changed]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        call.risk = "exec"
        call.risk_reason = f"runs code changed during this session ({shown})"  # type: ignore[attr-defined]
        with self._lock:
            self._asked[_key(call)] = changed
        return call

    def _accept(self, record: CallRecord) -> None:
        """A marked call that ran (its exec question answered yes): the change it was asked about is accepted."""
        assert record.prepared is not None
        asked = self._asked.pop(_key(record.prepared), None)
        if asked is None or record.decision is None or record.decision.action != "allow":
            return
        for path, seen in asked.items():
            if self.changed.get(path) == seen:
                del self.changed[path]
                self._code[path] = seen


def _key(call: PreparedCall) -> str:
    return f"{call.name}\0{sorted(call.arguments.items())!r}"


def _could_write(call: PreparedCall) -> bool:
    """A call of a built-in that only reads in nami's own process changes nothing; every other one might."""
    return not (call.risk == "read" and call.kind not in ("command", "pipeline", "script"))


# -- a project's watch ----------------------------------------------------------------------------------

_WATCHES: dict[tuple[Path, Path | None], ChangeWatch] = {}
_WATCHES_LOCK = threading.Lock()


def watch_for(project: Project) -> ChangeWatch:
    """The project's watch in this process, made at its first agent (its baseline: the files as they were
    before any call). Sub-agents and MCP clients share it: a change one of them made is the other's too."""
    key = (project.context.workspace, project.settings.config_path)
    with _WATCHES_LOCK:
        if key not in _WATCHES:
            _WATCHES[key] = ChangeWatch(watched_project(project))
        return _WATCHES[key]


def watched_project(project: Project) -> WatchedProject:
    from nami_yaml.config.agents import agent_files, read_agents
    from nami_yaml.config.agents import prompt_files as agent_prompt_files
    from nami_yaml.config.loaded import loaded_files
    from nami_yaml.shell.command_risks import PYTHON

    effective, workspace = project.settings, project.context.workspace
    loaded = loaded_files(effective, project_only=True) if effective.config_path is not None else None

    def code() -> list[Path]:
        if loaded is None or effective.config_path is None:
            return []
        return [*loaded.covered(), *agent_files(effective.config_path),
                *agent_prompt_files(read_agents(effective)[0])]

    by_name = {entry.name: entry for entry in loaded.tool_code} if loaded is not None else {}
    tools: dict[str, ToolCode] = {}
    imports: set[Path] = set()
    resolve = Resolver()  # a thousand tools' files are in a few folders
    for tool in project.registry:
        if tool.builtin:
            continue
        file = resolve(Path(tool.source.rsplit(":", 2)[0]))
        entry = by_name.get(tool.name)
        code_folders = entry.folders if entry is not None else ()
        files = (file, *(entry.files if entry is not None else ()))
        argv = getattr(tool.runner, "argv", None)
        program = argv[0] if argv and isinstance(argv[0], str) else ""
        folder: tuple[Path, ...] = ()
        if tool.risk != "exec" and PYTHON.fullmatch(os.path.basename(program)):
            # Python puts the working folder first on its import path (-m, -c): a module the model wrote
            # there is imported before the standard library's.
            cwd = str(getattr(getattr(tool.runner, "options", None), "cwd", None) or ".")
            folder = ((workspace / cwd).resolve(),) if "{" not in cwd else (workspace,)
            imports.update(folder)
        tools[tool.name] = ToolCode((file.parent,), files, folder, code_folders)
    folders = tuple(loaded.folders()) if loaded is not None else ()
    if effective.config_path is not None:
        folders += (effective.config_path.parent / "agents",)
    # Hooks run code too: a Python hook imports from the workspace (its working folder) as a tool does.
    from nami_yaml.config.hooks import hook_specs

    for spec in hook_specs(effective):
        argv = spec.argv(workspace)
        python = bool(PYTHON.fullmatch(os.path.basename(argv[0])))
        hooks_code = by_name.get("hooks")
        tools[hook_key(spec.source)] = ToolCode((), tuple(Path(word) for word in argv if os.path.isabs(word)),
                                                (workspace,) if python else (),
                                                hooks_code.folders if hooks_code is not None else ())
        if python:
            imports.add(workspace)
    return WatchedProject(workspace, code, tools, tuple(sorted(imports)), folders)


def hook_key(source: str) -> str:
    return f"hook {source}"
