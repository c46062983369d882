"""From the effective config to a registry: the selected built-ins, the library tools it names, then the
user's tool files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nami_yaml.config.effective import Effective
from nami_yaml.config.loaded import loaded_files
from nami_yaml.config.settings import DEFAULT_BUILTINS
from nami_yaml.config.skills import Skill, load_skills
from nami_yaml.config.targets import project_targets
from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.groups import LOADER, on_demand_groups
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
    chosen = effective.get("tools.builtin", "default")
    names = DEFAULT_BUILTINS if chosen == "default" else list(chosen)
    catalog = builtin_catalog()
    unknown = [name for name in names if name not in catalog]
    if unknown:
        lines = [f"{effective.where('tools', 'builtin', names.index(name))}: unknown built-in tool "
                 f"'{name}'{did_you_mean(name, list(catalog))}" for name in unknown]
        lines.append(f"built-in tools: {', '.join(catalog)}")
        raise ConfigError("\n".join(lines))
    return [catalog[name] for name in names]


def library_files(effective: Effective) -> list[Path]:
    """The library tool files ``tools.library`` selects (``[git, kubectl/logs]``)."""
    try:
        return resolve_library(effective.get("tools.library", []) or [])
    except UnknownLibraryName as exc:
        raise ConfigError(f"{_library_name_at(effective, exc.name)}: {exc}") from None


def _library_name_at(effective: Effective, name: str) -> str:
    """Where a library name was written: the config file (user or project) that lists it, else its path."""
    for config in reversed(effective.files):
        listed = (config.data.get("tools") or {}).get("library") or []
        if name in listed:
            path = ("tools", "library", listed.index(name))
            line, col = config.doc.position(path)
            return f"{config.doc.file}:{line}:{col}: {format_path(path)}"
    return format_path(("tools", "library"))


def tool_files(effective: Effective, extra: list[str] | None = None, base: Path | None = None) -> list[Path]:
    files: list[Path] = [*library_files(effective), *loaded_files(effective).tools]
    for spec in extra or []:
        found = expand_tool_paths(spec, base or Path.cwd())
        if not found:
            raise ConfigError(f"{spec}: matches no tool file")
        files.extend(found)
    unique: dict[Path, Path] = {}  # one entry per real file, shown by the path that named it
    for file in files:
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def check_toolset(effective: Effective, extra: list[str] | None = None, *, host: Host | None = None,
                  ) -> tuple[list[Tool], list[Problem]]:
    """For `nami check`: every tool that loads (with the readers the agent would get), and every error and
    warning (``host``: of this machine too)."""
    builtins = selected_builtins(effective)
    tools, problems = check_tools([*builtins, *tool_files(effective, extra)], builtin=builtins, host=host,
                                  targets=project_targets(effective))
    if any(p.is_error for p in problems):
        return tools, problems
    tools = grouped(tools)
    return _with_readers(tools, bool(load_skills(effective)), bool(on_demand_of(effective, tools))), problems


def build_registry(effective: Effective, extra: list[str] | None = None, base: Path | None = None,
                   skills: list[Skill] | None = None, target: str | None = None) -> Registry:
    """Load every selected tool (``extra`` paths relative to ``base``, default the current folder); raise
    SpecError listing all problems, or ConfigError. ``skills``: the agent's, if already loaded; ``target``:
    the one every targeted call runs on (``--target``), else the model chooses."""
    builtins = selected_builtins(effective)
    tools, problems = load_tools([*builtins, *tool_files(effective, extra, base)], builtin=builtins,
                                 targets=project_targets(effective, target))
    if problems:
        raise SpecError(problems)
    skills = load_skills(effective) if skills is None else skills
    return grouped_registry(effective, grouped(tools), has_skills=bool(skills))


def grouped_registry(effective: Effective, tools: list[Tool], *, has_skills: bool) -> Registry:
    """The registry of ``tools`` with the groups sent on demand (``tools.on_demand``, ``tools.eager``) and
    the built-ins that read on demand; also for a registry that MCP servers' tools were added to."""
    on_demand = on_demand_of(effective, tools)
    return Registry(_with_readers(tools, has_skills, bool(on_demand)), on_demand=on_demand)


def on_demand_of(effective: Effective, tools: list[Tool]) -> frozenset[str]:
    return on_demand_groups(tools, effective.get("tools.on_demand", "auto"), effective.get("tools.eager") or ())


def grouped(tools: list[Tool]) -> list[Tool]:
    """Library tools marked with their library group (the folder they come from)."""
    marked = []
    for tool in tools:
        group = library_group_of(tool.source)
        marked.append(replace(tool, group=group) if group is not None and tool.group is None else tool)
    return marked


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
    try:
        files = [*selected_builtins(effective), *tool_files(effective)]
    except ConfigError:
        return []
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
