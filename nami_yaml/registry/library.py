"""The ops tool library shipped with nami: curated tool files grouped by the CLI they wrap.

``nami_yaml/library/<group>/<tool>.yaml``, one tool per file. agent.yaml selects them by group
(``tools: {library: [git, kubectl]}``) or one file at a time (``kubectl/logs``); they then load like any
other tool file. The library is part of the installed package, like the built-ins: trusting a project
covers which tools it selects (agent.yaml names them), not the files, which nami itself ships.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.errors import Problem
from nami_yaml.paths import TOOL_SUFFIXES
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.overview import executables
from nami_yaml.registry.tool import Tool
from nami_yaml.spec.validate import did_you_mean

LIBRARY_ROOT = Path(__file__).resolve().parent.parent / "library"


class UnknownLibraryName(LookupError):
    """A name in ``tools.library`` that is neither a group nor a group/file of the library."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def library_groups(root: Path = LIBRARY_ROOT) -> dict[str, list[Path]]:
    """Group name -> its tool files, both sorted by name."""
    groups: dict[str, list[Path]] = {}
    if not root.is_dir():
        return groups
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(TOOL_SUFFIXES))
        if files:
            groups[folder.name] = files
    return groups


def selectors(root: Path = LIBRARY_ROOT) -> list[str]:
    """Every name agent.yaml may list: each group, and each ``group/file`` (file name without .yaml)."""
    names: list[str] = []
    for group, files in library_groups(root).items():
        names.append(group)
        names.extend(f"{group}/{file.stem}" for file in files)
    return names


def resolve_library(names: Iterable[str], root: Path = LIBRARY_ROOT) -> list[Path]:
    """The tool files the names select, in the order named, each once; raise UnknownLibraryName."""
    groups = library_groups(root)
    chosen: dict[Path, None] = {}
    for name in names:
        group, _, stem = name.partition("/")
        files = groups.get(group)
        if files is None:
            raise UnknownLibraryName(name, f"unknown library group '{group}'{did_you_mean(group, list(groups))}; "
                                           f"the library has: {', '.join(groups)}")
        if stem:
            files = [f for f in files if f.stem == stem]
            if not files:
                stems = [f.stem for f in groups[group]]
                raise UnknownLibraryName(name, f"the library group '{group}' has no tool file '{stem}'"
                                               f"{did_you_mean(stem, stems)}; it has: {', '.join(stems)}")
        chosen.update(dict.fromkeys(files))
    return list(chosen)


@dataclass(frozen=True)
class LibraryGroup:
    """One group as `nami tools library` shows it."""

    name: str
    files: list[Path]
    tools: list[Tool]
    programs: list[str]  # what its tools start, e.g. ["kubectl"]
    missing: list[str]  # of those, the ones not found on PATH here

    @property
    def available(self) -> bool:
        return not self.missing


def library_catalog(root: Path = LIBRARY_ROOT, search_path: str | None = None,
                    ) -> tuple[list[LibraryGroup], list[Problem]]:
    """Every group with its loaded tools and whether the programs they run are on ``search_path``."""
    catalog: list[LibraryGroup] = []
    problems: list[Problem] = []
    for name, files in library_groups(root).items():
        tools, found = load_tools(files)
        problems.extend(found)
        wanted = list(dict.fromkeys(program for tool in tools for program in executables(tool)))
        missing = [p for p in wanted if shutil.which(p, path=search_path) is None]
        catalog.append(LibraryGroup(name, files, tools, wanted, missing))
    return catalog, problems
