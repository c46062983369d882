"""The ops tool library shipped with nami: curated tool files grouped by the CLI they wrap.

``nami_yaml/library/<group>/<tool>.yaml``, one tool per file. agent.yaml selects them by group
(``tools: {library: [git, kubectl]}``) or one file at a time (``kubectl/logs``); they then load like any
other tool file. The library is part of the installed package, like the built-ins: trusting a project
covers which tools it selects (agent.yaml names them), not the files, which nami itself ships.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.errors import Problem
from nami_yaml.paths import TOOL_SUFFIXES, Resolver
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


def library_group_of(source: str, root: Path = LIBRARY_ROOT, *, resolve: Resolver | None = None) -> str | None:
    """The library group of a tool declared at ``source`` (``file:line:col``), or None outside the library.
    ``resolve``: one for a pass over many tools."""
    try:
        found = (resolve or Resolver()).text(source.rsplit(":", 2)[0])
    except (OSError, ValueError):
        return None
    inside = os.path.join(str(root), "")
    parts = found[len(inside):].split(os.sep) if found.startswith(inside) else []
    return parts[0] if len(parts) == 2 and all(parts) else None


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


@dataclass(frozen=True)
class ShapingSample:
    """What shaping does to a typical result of a library tool: a recorded output, before and after."""

    tool: str
    sample: Path
    before: int  # bytes of the recorded output
    after: int  # bytes the model reads instead (the note naming the saved file aside)


def library_sample(name: str, root: Path = LIBRARY_ROOT) -> Path | None:
    """The recorded output of library tool ``name`` (``<group>/samples/<name>.*``), if it has one."""
    found = sorted(root.glob(f"*/samples/{name}.*")) if root.is_dir() else []
    return found[0] if found else None


def shaping_samples(tools: Iterable[Tool], root: Path = LIBRARY_ROOT) -> list[ShapingSample]:
    """For each tool that shapes its output and has a recorded sample: the sample's bytes and the shaped
    text's, measured by the shaping the tool's calls get."""
    from nami_yaml.runners.shape import shape_text

    samples = []
    for tool in tools:
        sample = library_sample(tool.name, root) if tool.output is not None else None
        if sample is None or tool.output is None:
            continue
        raw = sample.read_bytes()
        shaped = shape_text(raw.decode("utf-8", errors="replace"), tool.output)
        samples.append(ShapingSample(tool.name, sample, len(raw), len(shaped.text.encode("utf-8"))))
    return samples
