"""HolmesGPT toolsets (``toolsets: {NAME: {tools: [{name, description, command | script}]}}``): Jinja
templates run by a shell. Parameters are the template's names (HolmesGPT infers them, untyped)."""

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
from nami_yaml.importers.jinja_template import Parsed, parse

SUMMARIZER = ("not brought: transformer '{name}' (an LLM summarizing the output); instead give the tool an "
              "`output:` (select, max_items) or a smaller command, and leave long output to the saved-output file")


def import_file(path: Path, out_dir: Path) -> Outcome:
    data = read_yaml(path, "HolmesGPT toolset")
    if not isinstance(data, dict) or not isinstance(data.get("toolsets"), dict):
        raise ImportProblem(f"{path}: no 'toolsets:' mapping, so not a HolmesGPT toolset file")
    outcome = Outcome(str(path), out_dir / f"{path.stem}.yaml", [])
    for toolset_name, toolset in data["toolsets"].items():
        if not isinstance(toolset, dict):
            continue
        for key in ("llm_instructions", "prerequisites", "config"):
            if toolset.get(key):
                outcome.general.append(f"toolset {toolset_name}: '{key}' not brought ({_instead(key)})")
        for raw in toolset.get("tools") or []:
            if isinstance(raw, dict):
                outcome.tools.append(import_tool(raw, f"{path}: {toolset_name}"))
    return outcome


def _instead(key: str) -> str:
    return {"llm_instructions": "put it in AGENTS.md or the agent's prompt",
            "prerequisites": "nami check warns about a program missing from PATH",
            "config": "set it in the tool's env: or the project's targets"}[key]


def import_tool(raw: dict[str, Any], where: str) -> Imported:
    imported = Imported(tool_name(raw.get("name", "")), f"{where}: {raw.get('name')}")
    template = raw.get("command") if raw.get("command") is not None else raw.get("script")
    if not isinstance(template, str):
        imported.skipped = "no command: or script: text"
        return imported
    parsed = parse(template)
    if parsed.problem:
        imported.skipped = parsed.problem
        return imported
    parameters, required = _parameters(parsed, raw.get("parameters"))
    imported.notes += [f"toolset configuration {fixed}" for fixed in parsed.fixed]
    untyped(imported, [n for n in parsed.names if n not in (raw.get("parameters") or {}) and n not in parsed.switches])
    # A script: stays a script whatever it looks like (it was written for a shell).
    script_only = "it was a script: in HolmesGPT" if raw.get("script") is not None else ""
    tool_from_template(imported, parsed.pieces, parameters, required, script_only=script_only)
    for transformer in raw.get("transformers") or []:
        imported.notes.append(SUMMARIZER.format(name=(transformer or {}).get("name", "?")))
    if imported.skipped:
        return imported
    ordered_tool(imported, raw.get("description") or raw.get("user_description") or "", parameters, required)
    return imported


def _parameters(parsed: Parsed, declared: Any) -> tuple[dict[str, Any], list[str]]:
    declared = declared if isinstance(declared, dict) else {}
    parameters: dict[str, Any] = {}
    required = list(parsed.required)
    for name in parsed.names:
        spec = declared.get(name) if isinstance(declared.get(name), dict) else {}
        if name in parsed.switches:
            parameters[name] = {"type": "boolean", "default": False}
            continue
        schema = string_parameter(str(spec.get("description") or ""))
        if spec.get("type") in ("integer", "number", "boolean"):
            schema["type"] = spec["type"]
        if name in parsed.defaults:
            default = schema["default"] = parsed.defaults[name]
            if isinstance(default, (bool, int, float)) and "type" not in spec:  # | default(500): a number
                schema["type"] = "boolean" if isinstance(default, bool) else "integer" if isinstance(
                    default, int) else "number"
        if spec.get("required") is False and name in required:
            required.remove(name)
        parameters[name] = schema
    return parameters, required
