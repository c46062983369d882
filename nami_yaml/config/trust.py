"""Trusting a project's agent.yaml before nami runs what it declares.

An agent.yaml found by walking up from the current folder may come from a repository someone else wrote:
its tools are commands, its entry points are Python, and it can choose the endpoint and the permissions.
Like direnv, nami runs tools from such a file only after the user has trusted it, and trusts exactly the
bytes it was shown: the agent.yaml, its system prompt, its tool files and the Python files beside them. A
change to any of them asks again. A file named with --config or $NAMI_CONFIG, and the user config, are the
user's own choice and need no trust step.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nami_yaml.config.mcp_servers import project_files as mcp_server_files
from nami_yaml.config.mcp_servers import server_specs
from nami_yaml.config.mcp_servers import trust_lines as mcp_trust_lines
from nami_yaml.config.sandbox import DeclaredNeeds
from nami_yaml.config.sandbox import trust_lines as sandbox_trust_lines
from nami_yaml.config.settings import Effective
from nami_yaml.config.trust_diff import changes_since_trusted, reviewable, save_snapshot, shown
from nami_yaml.display import visible
from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.overview import programs, runner_overview, sandbox_needs
from nami_yaml.registry.registry import Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.runtime import default_state_dir

FOUND_BY_WALKING = "found from the current folder"
OUTSIDE = "   <- OUTSIDE the project folder"


def trust_store() -> Path:
    return default_state_dir() / "trusted.json"


def needs_trust(effective: Effective) -> bool:
    return effective.config_path is not None and effective.found_by == FOUND_BY_WALKING


SKIPPED_FOLDERS = frozenset({".git", "node_modules", ".venv", "venv", ".tox", ".mypy_cache", ".ruff_cache"})
COMPILED_SUFFIXES = frozenset({".pyc", ".pyo", ".so", ".pyd"})  # Python may run these instead of the .py
MAX_HASHED_BYTES = 64_000_000  # beyond this, files count by size, times and inode only


def _project_data(effective: Effective) -> dict[str, Any]:
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    return project_file.data if project_file else {}


def tool_folders(effective: Effective) -> set[Path]:
    """The folders of the project's tool files (resolved): entry points import their Python from there."""
    folders: set[Path] = set()
    for spec in (_project_data(effective).get("tools") or {}).get("files", []):
        for tool_file in expand_tool_paths(spec, Path("/")):
            folders.add(tool_file.resolve().parent)
    return folders


def covered_files(effective: Effective) -> list[Path]:
    """Every file of the project that decides what runs: agent.yaml, its prompt, everything below the
    folders of the tool files it names (entry-point packages, helper modules, shipped bytecode, scripts a
    command runs, docs files) and below its skill folders, except inside SKIPPED_FOLDERS (nothing is
    imported from those: see code_check). Tool files added with --tools or by the user config are the
    user's own: not covered."""
    assert effective.config_path is not None
    data = _project_data(effective)
    files: set[Path] = {effective.config_path}
    if data.get("system_file"):
        files.add(Path(data["system_file"]))
    for spec in (data.get("tools") or {}).get("files", []):
        files.update(tool_file.resolve() for tool_file in expand_tool_paths(spec, Path("/")))
    folders = tool_folders(effective)
    folders.update(Path(spec) for spec in data.get("skills", []))  # skills are prompt text the model follows
    for script in mcp_server_files(effective):  # a server the project starts from its own files
        files.add(script)
        if script.parent != effective.config_path.parent:  # its folder (its modules), unless the project root
            folders.add(script.parent)
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
            files.update(Path(root) / name for name in names)
    return sorted(files)


def fingerprint(files: list[Path], *, budget: int = MAX_HASHED_BYTES) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file).encode() + b"\0")
        try:
            info = file.stat()
            if not stat.S_ISREG(info.st_mode):
                # A FIFO would block the read forever; a device is nobody's tool code.
                digest.update(f"not a regular file: {stat.S_IFMT(info.st_mode)}".encode())
            elif info.st_size <= budget:
                digest.update(hashlib.sha256(file.read_bytes()).digest())
                budget -= info.st_size
            else:
                # Size and mtime can be put back after an edit (touch -d); the inode change time cannot
                # be set by users, and a replaced file has a new inode.
                digest.update(f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_dev}:{info.st_ino}".encode())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def _load() -> dict[str, str]:
    store = trust_store()
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        # Keep the damaged file for the user; trusting nothing from it fails safe (nami asks again).
        with contextlib.suppress(OSError):
            os.replace(store, store.with_name(store.name + ".corrupt"))
        return {}
    return data


@dataclass
class TrustState:
    config: Path
    digest: str
    known: str | None  # the digest trusted before, if any
    files: list[Path] = field(default_factory=list)  # what the digest covers
    texts: list[Path] = field(default_factory=list)  # of those, the YAML and prompt files (diffed on a change)

    @property
    def trusted(self) -> bool:
        return self.known == self.digest

    @property
    def changed(self) -> bool:
        return self.known is not None and not self.trusted


def trust_state(effective: Effective) -> TrustState:
    assert effective.config_path is not None
    files = covered_files(effective)
    digest = fingerprint(files)
    return TrustState(effective.config_path, digest, _load().get(str(effective.config_path)), files,
                      reviewable(files, _prompt_file(effective)))


def _prompt_file(effective: Effective) -> Path | None:
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    prompt = project_file.data.get("system_file") if project_file else None
    return Path(prompt) if prompt else None


def code_check(effective: Effective) -> Callable[[Path], str | None]:
    """For RuntimeContext.code_check: asked before Python from a tool folder is imported, it refuses a
    file trust does not cover (in a folder trust skips, like node_modules, or behind a symlinked folder)
    and any import once the project's trusted files have changed (the model may write them mid-session)."""
    assert effective.config_path is not None
    config = effective.config_path
    folders = [os.path.normpath(folder) for folder in tool_folders(effective)]

    def check(file: Path) -> str | None:
        path = os.path.normpath(file)
        if not any(path.startswith(folder + os.sep) for folder in folders):
            return None  # not the project's tool code
        files = covered_files(effective)
        if Path(path) not in set(files):
            return (f"{file} is not covered by the trust given to {config} (it is in a folder trust skips, "
                    "behind a symlinked folder, or new); nami does not import it")
        if fingerprint(files) != _load().get(str(config)):
            return (f"the project's tool code changed since it was trusted ({config}); nothing from it is "
                    "imported until it is trusted again (nami trust)")
        return None

    return check


def remember(state: TrustState) -> None:
    """Record the trust atomically, under a lock so two sessions trusting at once both stay recorded."""
    store = trust_store()
    store.parent.mkdir(parents=True, exist_ok=True)
    with open(store.with_name(store.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load()
        data[str(state.config)] = state.digest
        temporary = store.with_name(f".{store.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.chmod(temporary, 0o600)
        os.replace(temporary, store)
        if state.files:
            with contextlib.suppress(OSError):  # the snapshot only serves the next diff; trust is recorded
                save_snapshot(state.config, state.files, state.texts)


def summary(effective: Effective, registry: Registry) -> list[str]:
    """What a reviewer should look at before trusting: what the file changes, which tools it adds (with the
    programs they run, the secrets they receive, a folder outside the project), and what changed since
    the last trust."""
    assert effective.config_path is not None
    project = effective.config_path.parent
    mine = str(effective.config_path)
    lines = [f"agent.yaml: {effective.config_path}"]
    for key in ("model.base_url", "model.api_key_env", "model.provider", "model.name", "permissions.write",
                "permissions.exec", "tools.fetch_url.allow_hosts", "tools.bash.max_timeout", "audit.path"):
        if effective.sources.get(key) == mine:
            lines.append(f"  sets {key} = {json.dumps(effective.get(key))}")
    for key in ("workspace", "system_file"):
        value = effective.get(key)
        if value and effective.sources.get(key) == mine:
            lines.append(f"  sets {key} = {value}" + ("" if _inside(Path(value), project) else OUTSIDE))
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    rules = (project_file.data.get("rules") or []) if project_file else []
    if rules:
        counts = {d: sum(1 for r in rules if r.get("decision") == d) for d in ("allow", "ask", "deny")}
        lines.append(f"  sets {len(rules)} rule{'s' if len(rules) != 1 else ''} "
                     f"({', '.join(f'{n} {d}' for d, n in counts.items() if n)}):")
        for rule in rules:
            lines.append(f"    {json.dumps(rule, ensure_ascii=False)}")
    if any(effective.sources.get(f"model.{k}") == mine for k in ("base_url", "api_key_env", "provider")):
        lines.append(f"  {_key_destination(effective)}")
    files = covered_files(effective)
    for file in files:
        if file.suffix in COMPILED_SUFFIXES:
            lines.append(f"  WARNING: compiled code that cannot be reviewed: {file} (delete it before trusting)")
    project_file = next((f for f in effective.files if f.path == effective.config_path), None)
    for spec in (project_file.data.get("skills", []) if project_file else []):
        lines.append(f"  adds skills from {spec}")
    lines.extend(mcp_trust_lines(effective))
    tools = [t for t in registry if not t.builtin]
    # What widens the sandbox: a change to any of it changes agent.yaml or a tool file, so trust asks again.
    declared = [DeclaredNeeds(t.name, str(t.source), sandbox_needs(t)) for t in tools]
    declared += [DeclaredNeeds(f"MCP server {s.name}", s.where, s.sandbox) for s in server_specs(effective)
                 if s.in_project]
    lines.extend(sandbox_trust_lines(project_file.data.get("sandbox") if project_file else None, declared))
    lines.append(f"  adds {len(tools)} tool{'s' if len(tools) != 1 else ''}:" if tools else "  adds no tools")
    workspace = Path(effective.get("workspace") or Path.cwd())
    for tool in tools:
        lines.extend(_tool_lines(tool, workspace, project))
    changed = changes_since_trusted(effective.config_path, files, reviewable(files, _prompt_file(effective)))
    if changed:
        lines.append("  changed since you trusted it:")
        for label, group in (("added", changed.added), ("removed", changed.removed), ("modified", changed.modified)):
            lines.extend(f"    {label:<8} {shown(file, project)}" for file in group)
        lines.extend(f"    {line}" for line in changed.diff)
    return [visible(line) for line in lines]  # names and paths come from the repository: no escape codes


def _inside(path: Path, project: Path) -> bool:
    return path == project or project in path.parents


def _key_destination(effective: Effective) -> str:
    """Where the API key comes from and goes: "from $DEEPSEEK_API_KEY (unset)", never "from unset"."""
    url = effective.get("model.base_url")
    source = effective.api_key_source
    if source.startswith("$"):
        return f"sends the API key from {source} to {url}"
    variable = effective.get("model.api_key_env")
    if effective.api_key is None:
        if variable:
            return f"sends the API key from ${variable} (unset) to {url}"
        return f"sends no API key to {url} (no api_key_env, and none is set)"
    return f"sends no real API key to {url} ({source})"


def _tool_lines(tool: Tool, workspace: Path, project: Path) -> list[str]:
    info = runner_overview(tool)
    runs = ", ".join(programs(tool)) or "?"
    lines = [f"    {tool.name} ({tool.risk}, {tool.runner.kind}) from {tool.source}: runs {runs}"]
    if info.get("docs_command"):
        lines.append(f"      docs: runs {json.dumps(info['docs_command'], ensure_ascii=False)} when the model reads "
                     "them, without asking")
    if info.get("env_passthrough"):
        lines.append(f"      receives the host's {', '.join(info['env_passthrough'])} (env_passthrough)")
    if info.get("cwd"):
        folder = (workspace / info["cwd"]).resolve()
        if not _inside(folder, project.resolve()):
            lines.append(f"      cwd {folder}{OUTSIDE}")
    return lines
