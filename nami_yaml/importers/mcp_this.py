"""mcp-this files (``tools:`` or ``toolsets: {NAME: {tools:}}``, each ``{description, execution: {command},
parameters: {NAME: {description, required}}}``): ``<<name>>`` placeholders put into shell text. They are
read here by splitting on the markers (``<<`` and ``>>`` have no other meaning in mcp-this)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nami_yaml.importers.common import (
    Imported,
    ImportProblem,
    Outcome,
    ordered_tool,
    read_yaml,
    string_parameter,
    tool_from_template,
    tool_name,
    untyped,
)
from nami_yaml.importers.template import Piece, Text, Var


def import_file(path: Path, out_dir: Path) -> Outcome:
    data = read_yaml(path, "mcp-this")
    if not isinstance(data, dict) or not (isinstance(data.get("tools"), dict) or isinstance(data.get("toolsets"), dict)):
        raise ImportProblem(f"{path}: no 'tools:' or 'toolsets:' mapping, so not an mcp-this file")
    outcome = Outcome(str(path), out_dir / f"{path.stem}.yaml", [])
    groups = [("", data.get("tools") or {})] + [
        (name, (toolset or {}).get("tools") or {}) for name, toolset in (data.get("toolsets") or {}).items()]
    for group, tools in groups:
        for name, raw in tools.items():
            if isinstance(raw, dict):
                outcome.tools.append(import_tool(str(name), raw, f"{path}: {group}".rstrip(": ")))
    if data.get("prompts"):
        outcome.general.append("'prompts' not brought: put them in AGENTS.md or skills")
    return outcome


def pieces_of(command: str) -> tuple[list[Piece], list[str]]:
    """``curl <<url>> -o x`` -> text and names; a ``<<`` without its ``>>`` stays text."""
    pieces: list[Piece] = []
    names: list[str] = []
    rest = command
    while "<<" in rest:
        before, _, after = rest.partition("<<")
        name, found, tail = after.partition(">>")
        if not found or not name.strip().isidentifier():
            pieces.append(Text(before + "<<"))
            rest = after
            continue
        pieces += [Text(before), Var(name.strip())]
        names.append(name.strip())
        rest = tail
    pieces.append(Text(rest))
    return [p for p in pieces if not (isinstance(p, Text) and not p.text)], list(dict.fromkeys(names))


def import_tool(name: str, raw: dict[str, Any], where: str) -> Imported:
    imported = Imported(tool_name(name), f"{where}: {name}")
    command = (raw.get("execution") or {}).get("command")
    if not isinstance(command, str):
        imported.skipped = "no execution.command text"
        return imported
    pieces, names = pieces_of(command)
    declared = raw.get("parameters") if isinstance(raw.get("parameters"), dict) else {}
    parameters: dict[str, Any] = {}
    required: list[str] = []
    for param in names:
        spec = declared.get(param) if isinstance(declared.get(param), dict) else {}
        parameters[param] = string_parameter(" ".join(str(spec.get("description") or "").split()))
        if spec.get("required", True):
            required.append(param)
    untyped(imported, names)
    if (raw.get("execution") or {}).get("uses_working_dir"):
        imported.notes.append("uses_working_dir not brought: nami tools run in the workspace; set cwd: for a fixed "
                              "folder inside it")
    tool_from_template(imported, pieces, parameters, required)
    if imported.skipped:
        return imported
    ordered_tool(imported, raw.get("description") or "", parameters, required)
    return imported
