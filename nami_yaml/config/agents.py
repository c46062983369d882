"""Named agents of a project: agent.yaml's ``agents:`` and the files ``agents/NAME.yaml`` beside it, each a
prompt, a choice of the project's tools and rights that can only narrow the project's.

Only the project's own agent.yaml declares agents (the user config serves every project: an agent is a
project's). Read as plain values here; app/named_agents.py turns them into agents.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import ConfigFile, Effective
from nami_yaml.errors import ERROR, Problem, SpecError
from nami_yaml.paths import path_for_messages
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, format_path, parse_yaml, read_source

AGENTS_FOLDER = "agents"
PROMPT_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True)
class AgentSpec:
    name: str
    description: str
    system: str | None  # the prompt's text (a prompt file already read)
    tools: tuple[str, ...] | None  # names or globs; None: every tool of the project
    permissions: dict[str, str]
    subagents: tuple[str, ...]
    model: dict[str, Any]
    limits: dict[str, Any]
    config: ConfigFile  # where it was declared, re-rooted so `rules`, `tools`… are at the top
    where: str  # file:line:col of its declaration, for messages

    @property
    def rules(self) -> list[dict[str, Any]]:
        return list(self.config.data.get("rules") or [])

    def position(self, *path: str | int) -> tuple[str, int, int]:
        line, col = self.config.doc.position(tuple(path))
        return self.config.doc.file, line, col


def agent_files(config_path: Path) -> list[Path]:
    """The files ``agents/*.yaml`` next to an agent.yaml (also what trust covers)."""
    folder = config_path.parent / AGENTS_FOLDER
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))


def prompt_files(specs: dict[str, AgentSpec]) -> list[Path]:
    """The prompt files the agents read (trust covers them: they become system prompts)."""
    return [Path(s.config.data["system_file"]) for s in specs.values() if s.config.data.get("system_file")]


def load_agents(effective: Effective) -> dict[str, AgentSpec]:
    """The project's named agents, by name; SpecError with every problem found (file:line:col)."""
    specs, problems = read_agents(effective)
    if problems:
        raise SpecError(problems)
    return specs


def read_agents(effective: Effective) -> tuple[dict[str, AgentSpec], list[Problem]]:
    project = effective.config_file(effective.config_path)
    if project is None:
        return {}, []
    specs: dict[str, AgentSpec] = {}
    problems: list[Problem] = []
    base = project.path.parent
    for name, data in (project.data.get("agents") or {}).items():
        sub = ConfigFile(project.path, data, _rooted(project.doc, ("agents", name)))
        _add(specs, problems, name, sub, base)
    for path in agent_files(project.path):
        loaded = _read_file(path, problems)
        if loaded is None:
            continue
        if path.stem in specs:
            line, col = loaded.doc.position(())
            problems.append(Problem(loaded.doc.file, line, col, "$", f"agent {path.stem!r} is also declared in "
                                    f"{specs[path.stem].where}: give it one home"))
            continue
        _add(specs, problems, path.stem, loaded, path.parent)
    return specs, problems


def _add(specs: dict[str, AgentSpec], problems: list[Problem], name: str, config: ConfigFile, base: Path) -> None:
    data = config.data
    doc = config.doc
    line, col = doc.position(())
    system = data.get("system")
    if isinstance(system, str) and _names_a_file(system):
        prompt = (base / system.strip()).resolve()
        try:
            system = read_source(prompt)
            data["system_file"] = str(prompt)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            problems.append(doc.problem(("system",), f"cannot read the prompt file {system.strip()} (relative to "
                                        f"{path_for_messages(base)}): {reason}"))
            return
    specs[name] = AgentSpec(
        name=name, description=str(data.get("description") or ""), system=system,
        tools=tuple(data["tools"]) if "tools" in data else None, permissions=dict(data.get("permissions") or {}),
        subagents=tuple(data.get("subagents") or ()), model=dict(data.get("model") or {}),
        limits=dict(data.get("limits") or {}), config=config, where=f"{doc.file}:{line}:{col}")


def _names_a_file(text: str) -> bool:
    """A one-line value ending in .md or .txt is a prompt file's name; anything else is the prompt."""
    stripped = text.strip()
    return "\n" not in stripped and stripped.lower().endswith(PROMPT_SUFFIXES)


def _read_file(path: Path, problems: list[Problem]) -> ConfigFile | None:
    name = path_for_messages(path)
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        problems.append(Problem(name, 1, 1, "$", f"cannot read agent file: {exc}"))
        return None
    doc, found = parse_yaml(text, name)
    problems.extend(found)
    if doc is None:
        return None
    data = doc.value if doc.value is not None else {}
    if not isinstance(data, dict):
        problems.append(doc.problem((), f"an agent file must be a mapping, found {type(data).__name__}"))
        return None
    schema_problems = problems_for(doc, data, (), validator("agent", "named_agent"))
    if schema_problems:
        problems.extend(schema_problems)
        return None
    data.pop("$schema", None)
    return ConfigFile(path.resolve(), data, doc)


@dataclass
class _Rooted(Document):
    """The part of a document below ``prefix`` as a document of its own: positions kept, and problems
    still name the whole path (``$.agents.reviewer.tools[0]``)."""

    prefix: tuple[str | int, ...] = ()

    def problem(self, path: JsonPath, message: str, *, key: bool = False, severity: str = ERROR) -> Problem:
        found = super().problem(path, message, key=key, severity=severity)
        return replace(found, path=format_path((*self.prefix, *path)))


def _rooted(doc: Document, prefix: tuple[str | int, ...]) -> Document:
    size = len(prefix)

    def below(positions: dict[Any, tuple[int, int]]) -> dict[Any, tuple[int, int]]:
        return {path[size:]: where for path, where in positions.items() if tuple(path[:size]) == prefix}

    value = doc.value
    for part in prefix:
        value = value[part]
    return _Rooted(doc.file, value, below(doc.positions), below(doc.key_positions), prefix=prefix)
