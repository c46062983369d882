"""``nami init``: start a project (agent.yaml, an example tool, schemas for editors), or add one tool."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from nami_yaml.app.scaffold import (
    ScaffoldError,
    create_files,
    existing,
    link_problem,
    project_files,
    refresh_schemas,
    schema_files,
    tool_file,
    used_groups,
)
from nami_yaml.app.toolset import build_registry, tool_files
from nami_yaml.cli.common import EXIT_ERROR, EXIT_USAGE, fail, handle_errors
from nami_yaml.cli.completion import complete_library_names
from nami_yaml.config.files import CONFIG_NAME, find_config
from nami_yaml.config.settings import load_settings
from nami_yaml.errors import NamiError
from nami_yaml.paths import path_for_messages
from nami_yaml.project_request import ProjectRequest
from nami_yaml.registry.library import UnknownLibraryName, library_catalog, resolve_library


@click.command("init")
@click.option("--tool", "tool_name", metavar="NAME", help="Only add a tool file, tools/NAME.yaml, to this project.")
@click.option("--library", "library", multiple=True, metavar="GROUP", shell_complete=complete_library_names,
              help="Library groups for agent.yaml (repeatable); default: those the project uses (a .git, a "
                   "Chart.yaml, *.tf…) whose CLI is on PATH, if you agree.")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Add the library groups the project uses (CLI on PATH) without asking.")
@click.option("--schemas", "schemas_only", is_flag=True,
              help="Only write or refresh the schema copies in .nami/schemas/ (after upgrading nami).")
@handle_errors
def init(tool_name: str | None, library: tuple[str, ...], assume_yes: bool, schemas_only: bool) -> None:
    """Start a nami project here: agent.yaml, an example tool in tools/, and the schemas editors use.

    Refuses to overwrite anything. With --tool NAME, only adds tools/NAME.yaml to the project found here or
    above. Files are written whole or not at all.
    """
    cwd = Path.cwd()
    try:
        if schemas_only:
            _refresh(_project_root(cwd))
        elif tool_name is not None:
            _add_tool(_project_root(cwd), tool_name)
        else:
            _new_project(cwd, list(library), assume_yes)
    except ScaffoldError as exc:
        fail(f"nami: {exc}", EXIT_ERROR)


def _project_root(cwd: Path) -> Path:
    found, _ = find_config(None, os.environ, cwd)
    return found.parent if found else cwd


def _new_project(root: Path, library: list[str], assume_yes: bool) -> None:
    if (root / CONFIG_NAME).exists():
        fail(f"nami: {CONFIG_NAME} already exists here; nothing was written (`nami init --tool NAME` adds a tool)",
             EXIT_ERROR)
    groups = _chosen_groups(library, assume_yes, root)
    files = project_files(root, groups)
    problem = link_problem(root, files)  # the copies kept too: nothing is read or written through a link
    if problem:
        raise ScaffoldError(problem)
    kept = [f for f in files if f in schema_files(root) and existing([f])]  # generated copies: keep, never fail
    written = create_files([f for f in files if f not in kept], root=root)
    for path in written:
        click.echo(f"created {path_for_messages(path)}")
    for file in kept:
        click.echo(f"kept    {path_for_messages(file.path)} (`nami init --schemas` refreshes it)")
    parent, _ = find_config(None, os.environ, root.parent) if root.parent != root else (None, "")
    if parent is not None:
        click.echo(f"note: {parent} is above this folder; here, the new {CONFIG_NAME} is used instead")
    counts = _tool_counts(root)
    if counts:
        click.echo(counts)
    click.echo("\nnext:")
    click.echo("  export DEEPSEEK_API_KEY=sk-...   # or switch agent.yaml to the Ollama section")
    click.echo("  nami doctor                      # checks the key, the endpoint, the tools' programs")
    click.echo("  nami trust                       # once: tools of an agent.yaml run after you trust it")
    click.echo('  nami run "What is in this project?"')


def _chosen_groups(library: list[str], assume_yes: bool, root: Path) -> list[str]:
    """The groups named with --library; else those whose CLI is on PATH and that the project plainly uses
    (a .git, a Chart.yaml, *.tf…), asked once (added by --yes). The other groups on PATH are only named:
    nine CLIs found is not nine CLIs this project needs."""
    if library:
        try:
            resolve_library(library)
        except UnknownLibraryName as exc:
            fail(f"nami: --library {exc.name}: {exc}", EXIT_USAGE)
        return library
    catalog, _ = library_catalog(search_path=os.environ.get("PATH"))
    available = [group.name for group in catalog if group.available]
    evidence = used_groups(root)
    used = [name for name in available if name in evidence]
    rest = [name for name in available if name not in evidence]
    chosen = _ask_for(used, evidence, assume_yes) if used else []
    if rest:
        click.echo(f"also on PATH, not used here, not added: {', '.join(rest)} (add any to tools.library in "
                   f"{CONFIG_NAME}; `nami tools library` lists them)")
    return chosen


def _ask_for(used: list[str], evidence: dict[str, str], assume_yes: bool) -> list[str]:
    seen = ", ".join(f"{name} ({evidence[name]})" for name in used)
    question = f"Found on PATH and used here: {seen}. Add nami's library tools for them to agent.yaml?"
    if assume_yes:
        return used
    if not can_ask():
        click.echo(f"not adding library tools for {', '.join(used)} (no terminal to ask; --yes adds them)", err=True)
        return []
    return used if click.confirm(question, default=True) else []


def _tool_counts(root: Path) -> str | None:
    """How many tools the new project has and how many definitions the model gets up front (library
    groups are sent when it loads them), or None when it cannot say (a problem `nami check` will show)."""
    try:
        registry = build_registry(load_settings(ProjectRequest(config=str(root / CONFIG_NAME))), base=root)
    except NamiError:
        return None
    groups = registry.groups()
    if not groups:
        return f"tools: {len(registry)}, all sent to the model up front"
    waiting = sum(len(names) for names in groups.values())
    return (f"tools: {len(registry)}; the model gets {len(registry.definitions())} definitions up front, "
            f"load_tools among them; the library groups {', '.join(groups)} ({waiting} tools) load when it asks")


def can_ask() -> bool:
    return sys.stdin.isatty()


def _add_tool(root: Path, name: str) -> None:
    try:
        file = tool_file(root, name)
    except ScaffoldError as exc:
        fail(f"nami: {exc}", EXIT_USAGE)
    missing_schemas = [f for f in schema_files(root) if not existing([f])]
    for path in create_files([file, *missing_schemas], root=root):
        click.echo(f"created {path_for_messages(path)}")
    if not _loaded_by_project(file.path):
        click.echo(f"note: agent.yaml does not load {path_for_messages(file.path)} yet: add "
                   f"{path_for_messages(file.path.parent)}/ to tools.files", err=True)
    click.echo(f"next: edit it, then `nami check` and `nami tools call {name} target=example --dry-run`")


def _loaded_by_project(path: Path) -> bool:
    try:
        effective = load_settings(ProjectRequest(config=None))
        return path.resolve() in {p.resolve() for p in tool_files(effective)}
    except NamiError:
        return False


def _refresh(root: Path) -> None:
    changed = refresh_schemas(root)
    for path in changed:
        click.echo(f"wrote   {path_for_messages(path)}")
    if not changed:
        click.echo(f"the schemas in {path_for_messages(root / '.nami' / 'schemas')} are up to date")
