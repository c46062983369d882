"""From the effective config to a registry: the selected built-ins, the library tools it names, then the
user's tool files."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from nami_yaml.config.effective import Effective
from nami_yaml.config.loaded import loaded_files
from nami_yaml.config.settings import DEFAULT_BUILTINS
from nami_yaml.config.skills import Skill, load_skills
from nami_yaml.config.targets import project_targets
from nami_yaml.errors import Problem, SpecError
from nami_yaml.paths import Resolver, expand_tool_paths
from nami_yaml.registry.groups import LOADER, on_demand_groups, weighs_more
from nami_yaml.registry.library import UnknownLibraryName, library_group_of, resolve_library
from nami_yaml.registry.loader import Host, check_tools, load_tools
from nami_yaml.registry.registry import DOCS_READER, Registry
from nami_yaml.registry.tool import Tool
from nami_yaml.spec.validate import did_you_mean
from nami_yaml.spec.yamlpos import format_path

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtins"
SKILL_READER = "skill"


def builtin_catalog() -> dict[str, Path]:
    """Built-in tools by name; each lives in ``nami_yaml/builtins/<name>.yaml``."""
    return {path.stem: path for path in sorted(BUILTIN_DIR.glob("*.yaml"))}


def selected_builtins(effective: Effective) -> list[Path]:
    """The built-in tool files ``tools.builtin`` selects; SpecError names each unknown one."""
    return _raised(_builtins(effective))


def _builtins(effective: Effective) -> tuple[list[Path], list[Problem]]:
    chosen = effective.tools.builtin
    names = DEFAULT_BUILTINS if chosen == "default" else list(chosen)
    catalog = builtin_catalog()
    problems = [_listed_at(effective, "builtin", name, f"unknown built-in tool '{name}'"
                           f"{did_you_mean(name, list(catalog))}; the built-in tools are {', '.join(catalog)}")
                for name in names if name not in catalog]
    return [catalog[name] for name in names if name in catalog], problems


def library_files(effective: Effective) -> list[Path]:
    """The library tool files ``tools.library`` selects (``[git, kubectl/logs]``)."""
    return _raised(_library(effective))


def _library(effective: Effective) -> tuple[list[Path], list[Problem]]:
    files: dict[Path, None] = {}
    problems = []
    for name in effective.tools.library:
        try:
            files.update(dict.fromkeys(resolve_library([name])))
        except UnknownLibraryName as exc:
            problems.append(_listed_at(effective, "library", name, str(exc)))
    return list(files), problems


def _listed_at(effective: Effective, key: str, name: str, message: str) -> Problem:
    """A problem of a name in ``tools.<key>``, at the config file (user or project) that lists it."""
    for config in reversed(effective.files):
        listed = (config.data.get("tools") or {}).get(key) or []
        if isinstance(listed, list) and name in listed:
            return config.doc.problem(("tools", key, listed.index(name)), message)
    return Problem("agent.yaml", 1, 1, format_path(("tools", key)), message)


def _raised(found: tuple[list[Path], list[Problem]]) -> list[Path]:
    files, problems = found
    if problems:
        raise SpecError(problems)
    return files


def tool_files(effective: Effective, extra: list[str] | None = None, base: Path | None = None) -> list[Path]:
    """Every tool file the settings select (library, then ``tools.files``) and ``extra`` (relative to
    ``base``), each once; SpecError lists every name or path that selects nothing."""
    return _raised(_tool_files(effective, extra, base))


def _tool_files(effective: Effective, extra: list[str] | None = None,
                base: Path | None = None) -> tuple[list[Path], list[Problem]]:
    files, problems = _library(effective)
    files.extend(loaded_files(effective).tools)
    for spec in extra or []:
        found = expand_tool_paths(spec, base or Path.cwd())
        if not found:
            problems.append(Problem(spec, 1, 1, "$", "matches no tool file (given with --tools or as a PATH)"))
        files.extend(found)
    unique: dict[Path, Path] = {}  # one entry per real file, shown by the path that named it
    resolve = Resolver()
    for file in files:
        unique.setdefault(resolve.text(os.fspath(file)), file)
    return list(unique.values()), problems


def check_toolset(effective: Effective, extra: list[str] | None = None, *, host: Host | None = None,
                  ) -> tuple[list[Tool], list[Problem]]:
    """For `nami check`: every tool that loads (with the readers the agent would get), and every error and
    warning (``host``: of this machine too): unknown built-in or library names and paths that match no
    file among them, with the problems of every tool file that does load."""
    builtins, problems = _builtins(effective)
    files, more = _tool_files(effective, extra)
    tools, found = check_tools([*builtins, *files], builtin=builtins, host=host, targets=project_targets(effective))
    problems = [*problems, *more, *found]
    if any(p.is_error for p in problems):
        return tools, problems
    tools = grouped(tools, effective)
    return _with_readers(tools, bool(load_skills(effective)), bool(on_demand_of(effective, tools))), problems


def build_registry(effective: Effective, extra: list[str] | None = None, base: Path | None = None,
                   skills: list[Skill] | None = None, target: str | None = None) -> Registry:
    """Load every selected tool (``extra`` paths relative to ``base``, default the current folder); raise
    SpecError listing all problems, or ConfigError. ``skills``: the agent's, if already loaded; ``target``:
    the one every targeted call runs on (``--target``), else the model chooses."""
    builtins, problems = _builtins(effective)
    files, more = _tool_files(effective, extra, base)
    tools, found = load_tools([*builtins, *files], builtin=builtins, targets=project_targets(effective, target))
    if problems or more or found:
        raise SpecError([*problems, *more, *found])
    skills = load_skills(effective) if skills is None else skills
    return grouped_registry(effective, grouped(tools, effective), has_skills=bool(skills))


def grouped_registry(effective: Effective, tools: list[Tool], *, has_skills: bool) -> Registry:
    """The registry of ``tools`` with the groups sent on demand (``tools.on_demand``, ``tools.eager``) and
    the built-ins that read on demand; also for a registry that MCP servers' tools were added to."""
    on_demand = on_demand_of(effective, tools)
    return Registry(_with_readers(tools, has_skills, bool(on_demand)), on_demand=on_demand)


def on_demand_of(effective: Effective, tools: list[Tool]) -> frozenset[str]:
    return on_demand_groups(tools, effective.tools.on_demand, effective.tools.eager)


def grouped(tools: list[Tool], effective: Effective | None = None) -> list[Tool]:
    """Library tools marked with their library group (the folder they come from); the project's own tools
    with theirs (a tool's ``group:``, else its file's folder) once together they weigh more than
    ``tools.files_on_demand``, and with none below it (they are all sent, as they always were). Without
    ``effective``, only the library's are marked."""
    marked: list[Tool] = []
    own: list[int] = []
    resolve = Resolver()  # a thousand tools' files are in a few folders
    for tool in tools:
        group = library_group_of(tool.source, resolve=resolve)
        if group is not None:
            marked.append(replace(tool, group=group) if tool.group is None else tool)
            continue
        if not tool.builtin:
            own.append(len(marked))
        marked.append(tool)
    if effective is None:
        return marked
    settings = effective.tools
    offered = settings.on_demand is not False and settings.files_on_demand is not None
    if offered and weighs_more((marked[i].definition(docs_hint=True) for i in own),
                               settings.files_on_demand):  # type: ignore[arg-type]
        project = effective.config_path.parent if effective.config_path is not None else Path.cwd()
        for i in own:
            marked[i] = replace(marked[i], group=marked[i].group or folder_group(marked[i], project, resolve))
    else:
        for i in own:
            marked[i] = replace(marked[i], group=None) if marked[i].group is not None else marked[i]
    return marked


def folder_group(tool: Tool, project: Path, resolve: Resolver | None = None) -> str:
    """The group of a project's tool without ``group:``: its file's folder, relative to the project's
    (``tools/k8s/``), or the folder's name for one outside it; written with a slash, so it never takes the
    name of a library group or an MCP server."""
    resolve = resolve or Resolver()
    folder = os.path.dirname(resolve.text(tool.source.rsplit(":", 2)[0]))
    top = resolve.folder_text(os.fspath(project))
    inside = os.path.join(top, "")
    relative = "" if folder == top else folder[len(inside):] if folder.startswith(inside) else os.path.basename(folder)
    # Written into load_tools' own description: a folder's name (the repository's choice) says nothing else
    # there, as a group: key cannot (its schema pattern).
    return f"{_GROUP_UNSAID.sub('_', relative)}/" if relative else "./"


_GROUP_UNSAID = re.compile(r"[^a-zA-Z0-9_./-]")


def _with_readers(tools: list[Tool], has_skills: bool, has_groups: bool = False) -> list[Tool]:
    """The built-ins that read text on demand come with what they read: tool_docs whenever a tool has
    docs, skill whenever the agent has skills, load_tools whenever groups are sent on demand (after the
    other built-ins, unless a tool took the name)."""
    names = {tool.name for tool in tools}
    wanted = [name for name, needed in ((DOCS_READER, any(t.docs is not None for t in tools)),
                                        (SKILL_READER, has_skills), (LOADER, has_groups))
              if needed and name not in names]
    if not wanted:
        return tools
    catalog = builtin_catalog()
    readers, problems = load_tools([catalog[name] for name in wanted], builtin=[catalog[name] for name in wanted])
    if problems:  # the package itself is broken
        raise SpecError(problems)
    position = sum(tool.builtin for tool in tools)
    return [*tools[:position], *readers, *tools[position:]]


def declared_tool_names(effective: Effective) -> list[str]:
    """The names the selected tools declare, read without validating anything: for shell completion, which
    must answer fast and whatever state the files are in. (A file that does not parse gives no names.)"""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    (builtins, unknown), (files, unmatched) = _builtins(effective), _tool_files(effective)
    if unknown or unmatched:
        return []
    files = [*builtins, *files]
    names: list[str] = []
    for file in files:
        try:
            data = yaml.load(file.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 (a safe loader)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        entries = data.get("tools") if isinstance(data, dict) and "tools" in data else [data]
        if isinstance(entries, list):
            names.extend(e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str))
    return list(dict.fromkeys(names))
