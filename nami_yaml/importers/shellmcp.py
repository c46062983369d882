"""shellmcp server files (``server:``, shared ``args:``, ``tools: {NAME: {cmd, desc, args: [...], env}}``):
Jinja command templates run by a shell, with typed arguments (string, number, boolean, array)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nami_yaml.importers.common import (
    Imported,
    ImportProblem,
    Outcome,
    ordered_tool,
    read_yaml,
    tool_from_template,
    tool_name,
    untyped,
)
from nami_yaml.importers.jinja_template import parse

TYPES = {"string": "string", "number": "number", "boolean": "boolean", "array": "array", "integer": "integer"}


def import_file(path: Path, out_dir: Path) -> Outcome:
    data = read_yaml(path, "shellmcp")
    if not isinstance(data, dict) or not isinstance(data.get("tools"), dict):
        raise ImportProblem(f"{path}: no 'tools:' mapping of name to cmd, so not a shellmcp file")
    outcome = Outcome(str(path), out_dir / f"{path.stem}.yaml", [])
    shared = data.get("args") if isinstance(data.get("args"), dict) else {}
    server_env = (data.get("server") or {}).get("env") or {}
    for key in ("resources", "prompts"):
        if data.get(key):
            outcome.general.append(f"'{key}' not brought: nami tools are tools; put prompts in AGENTS.md or skills")
    for name, raw in data["tools"].items():
        if isinstance(raw, dict):
            outcome.tools.append(import_tool(str(name), raw, shared, server_env, str(path)))
    return outcome


def import_tool(name: str, raw: dict[str, Any], shared: dict[str, Any], server_env: dict[str, Any],
                where: str) -> Imported:
    imported = Imported(tool_name(name), f"{where}: {name}")
    if not isinstance(raw.get("cmd"), str):
        imported.skipped = "no cmd: text"
        return imported
    parsed = parse(raw["cmd"])
    if parsed.problem:
        imported.skipped = parsed.problem
        return imported
    parameters: dict[str, Any] = {}
    required: list[str] = []
    declared = set()
    for arg in raw.get("args") or []:
        if not isinstance(arg, dict) or not arg.get("name"):
            continue
        spec = {**(shared.get(arg.get("ref")) or {}), **{k: v for k, v in arg.items() if k != "ref"}}
        declared.add(spec["name"])
        parameters[spec["name"]] = _schema(spec)
        if spec.get("required", "default" not in spec) and spec["name"] not in parsed.switches:
            required.append(spec["name"])
    for missing in [n for n in parsed.names if n not in parameters]:
        parameters[missing] = {"type": "boolean", "default": False} if missing in parsed.switches else {"type": "string"}
        if missing in parsed.required:
            required.append(missing)
    untyped(imported, [n for n in parsed.names if n not in declared and n not in parsed.switches])
    env = {**server_env, **(raw.get("env") or {})}
    tool_from_template(imported, parsed.pieces, parameters, required)
    if imported.skipped:
        return imported
    if env:
        imported.tool["env"] = {str(k): str(v) for k, v in env.items()}
    if raw.get("help-cmd"):
        imported.notes.append(f"help-cmd not brought: give the tool docs: [...] with that command ({raw['help-cmd']})")
    ordered_tool(imported, raw.get("desc") or "", parameters, required)
    return imported


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": TYPES.get(str(spec.get("type") or "string"), "string")}
    if schema["type"] == "array":
        schema["items"] = {"type": "string"}
    if spec.get("help"):
        schema["description"] = " ".join(str(spec["help"]).split())
    if spec.get("choices"):
        schema["enum"] = list(spec["choices"])
    if spec.get("pattern"):
        schema["pattern"] = str(spec["pattern"])
    if "default" in spec and spec["default"] is not None:
        schema["default"] = spec["default"]
    return schema
