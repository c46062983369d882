"""Tool YAML files -> validated Tools. Collects every problem; executes and imports nothing.

``load_tools`` returns the tools and the errors (a tool with an error is not loaded); ``check_tools`` also
returns the warnings, and with a Host it looks at the machine too (programs on PATH, cwd folders).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nami_yaml.errors import Problem, only_errors
from nami_yaml.paths import path_for_messages, walked
from nami_yaml.registry.checks import TOOL_CHECKS
from nami_yaml.registry.draft import Host, ToolDraft, known_tool_keys
from nami_yaml.registry.shared_parts import DEFAULTS_KEY, DEFS_KEY, check_shared, completed
from nami_yaml.registry.targets import TARGET_PARAMETER, with_target_parameter
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.entrypoint import EntrypointRunner
from nami_yaml.runners.options import DocSource, OutputShape, ProcessOptions
from nami_yaml.runners.pipeline import PipelineRunner
from nami_yaml.runners.script import ScriptRunner
from nami_yaml.runners.template import scalar_text
from nami_yaml.runtime import TargetSet
from nami_yaml.sandbox_settings import SandboxNeeds
from nami_yaml.spec.fastcheck import tool_surely_valid
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, parse_file

SCHEMA_KEY = "$schema"  # for editors (yaml-language-server reads it); nami ignores it


@dataclass(frozen=True)
class _Found:
    tool: Tool
    name_at: Problem  # where the tool's ``name`` is, for duplicate-name reports


def load_tool_file(path: Path, *, builtin: bool = False, targets: TargetSet | None = None,
                   ) -> tuple[list[Tool], list[Problem]]:
    """The tools of one file and its errors."""
    found, problems = _load_file(path, builtin, None, targets or TargetSet())
    return [f.tool for f in found], only_errors(problems)


def load_tools(files: Iterable[Path], *, builtin: Iterable[Path] = (), targets: TargetSet | None = None,
               ) -> tuple[list[Tool], list[Problem]]:
    """Load many files (``builtin`` ones are marked so); a name defined twice is reported with both places.
    ``targets``: the project's, for the tools that run on one. Returns the tools and the errors; warnings
    are left to ``check_tools``."""
    tools, problems = check_tools(files, builtin=builtin, targets=targets)
    return tools, only_errors(problems)


def check_tools(files: Iterable[Path], *, builtin: Iterable[Path] = (), host: Host | None = None,
                targets: TargetSet | None = None) -> tuple[list[Tool], list[Problem]]:
    """Like ``load_tools``, with warnings among the problems; a ``host`` adds the checks of this machine."""
    builtin_files = set(builtin)
    tools: list[Tool] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for file in files:
        found, file_problems = _load_file(file, file in builtin_files, host, targets or TargetSet())
        problems.extend(file_problems)
        for item in found:
            name, at = item.tool.name, item.name_at
            if name in seen:
                problems.append(replace(at, message=f"duplicate tool name '{name}': also defined at {seen[name]}"))
                continue
            seen[name] = f"{at.file}:{at.line}:{at.col}"
            tools.append(item.tool)
    return tools, problems


def _load_file(path: Path, builtin: bool, host: Host | None, targets: TargetSet,
               ) -> tuple[list[_Found], list[Problem]]:
    try:
        doc, problems = parse_file(path)
    except (OSError, ValueError) as exc:
        return [], [Problem(path_for_messages(path), 1, 1, "$", f"cannot read tool file: {exc}")]
    if doc is None:
        return [], problems
    found = []
    for where, entry in _entries(doc, problems):
        shared_problems: list[Problem] = []  # the tool's own: they keep it from loading
        if where:
            entry = completed(doc, doc.value, where, entry, known_tool_keys(), shared_problems)
        draft = ToolDraft(doc, where, entry, path, problems, host, targets)
        tool = _build_tool(draft, builtin, shared_problems)
        if tool is not None:
            found.append(_Found(tool, doc.problem((*where, "name"), "")))
    return found, problems


def _entries(doc: Document, problems: list[Problem]) -> list[tuple[JsonPath, dict[str, Any]]]:
    """The tool mappings of a file with their paths: the file itself, or the items of ``tools:``."""
    value = doc.value
    if not isinstance(value, dict):
        found = "an empty file" if value is None else f"a {type(value).__name__}"
        problems.append(doc.problem((), f"a tool file holds a tool (a mapping) or `tools:` with a list; found {found}"))
        return []
    if "tools" not in value:
        return [((), value)]
    for key in value:
        if key not in ("tools", SCHEMA_KEY, DEFAULTS_KEY, DEFS_KEY):
            problems.append(doc.problem((key,), f"unknown key '{key}' next to `tools:`; put it inside a tool of "
                                                "the list, or in `defaults:` for all of them", key=True))
    check_shared(doc, value, known_tool_keys(), problems)
    listed = value["tools"]
    if not isinstance(listed, list) or not listed:
        problems.append(doc.problem(("tools",), "`tools:` must be a non-empty list of tools"))
        return []
    entries = []
    for index, entry in enumerate(listed):
        if isinstance(entry, dict):
            entries.append((("tools", index), entry))
        else:
            problems.append(doc.problem(("tools", index), "each item of `tools:` must be a tool (a mapping)"))
    return entries


def _build_tool(draft: ToolDraft, builtin: bool, found: Iterable[Problem] = ()) -> Tool | None:
    """Run the schema and every check on one tool; build it only if none of them (nor ``found``, the
    problems of its shared parts) found an error."""
    raw = draft.raw
    before = len(draft.problems)
    draft.problems.extend(found)
    # A command written as one string gets its own message (showing the list it should be) from the checks.
    shown = {k: v for k, v in raw.items() if not (k == "command" and isinstance(v, str))}
    if not tool_surely_valid(shown):
        draft.problems.extend(problems_for(draft.doc, shown, draft.where, validator("tool", "tool")))
    for check in TOOL_CHECKS:
        check(draft)
    docs = _docs(draft)
    if any(p.is_error for p in draft.problems[before:]):
        return None
    parameters = draft.parameters
    if draft.targeted:
        parameters = with_target_parameter(parameters, draft.targets)
    parameters = _normalized(parameters)
    line, col = draft.doc.position(draft.where)
    runner = _runner(raw, draft.runners[0], draft.file, draft.targeted)
    if builtin and isinstance(runner, EntrypointRunner):
        runner = replace(runner, base_dir=None)  # nami's own package: imported normally, not a tool folder
    return Tool(
        name=raw["name"], description=raw["description"].strip(), parameters=parameters,
        risk=raw.get("risk", "exec"), runner=runner, source=f"{draft.doc.file}:{line}:{col}", builtin=builtin,
        docs=docs, writes=tuple(raw.get("writes", ())), targets=draft.targets if draft.targeted else None,
        output=_output_shape(raw.get("output")), group=raw.get("group"),
    )


def _docs(draft: ToolDraft) -> DocSource | None:
    """``docs:``: a regular file inside the tool file's folder, where trust's walk reaches it (not in
    node_modules, say), or an argv command."""
    docs = draft.raw.get("docs")
    if isinstance(docs, list):
        return DocSource(command=tuple(str(part) for part in docs), options=_process_options(draft.raw, draft.file))
    if not isinstance(docs, str):
        return None
    folder = draft.file.parent.resolve()
    target = (folder / docs).resolve()
    if not target.is_relative_to(folder):
        draft.error(("docs",), f"docs {docs!r} is outside the tool file's folder {folder}")
    elif not target.is_file():
        draft.error(("docs",), f"docs file {docs!r} not found next to the tool file (looked for {target})")
    elif not walked(target, folder):
        draft.error(("docs",), f"docs {docs!r} is in a folder nami does not read tool files from (node_modules, "
                               ".venv, ...): trust does not cover it; move it beside the tool file")
    else:
        return DocSource(file=target)
    return None


def _normalized(parameters: dict[str, Any]) -> dict[str, Any]:
    """Unknown argument keys are refused unless the author allows them explicitly, and the model is told."""
    if "additionalProperties" in parameters:
        return parameters
    return {**parameters, "additionalProperties": False}


def _sandbox_needs(raw: dict[str, Any], file: Path) -> SandboxNeeds:
    return SandboxNeeds.from_mapping(raw.get("sandbox"), origin=path_for_messages(file))


def _process_options(raw: dict[str, Any], file: Path) -> ProcessOptions:
    return ProcessOptions(
        timeout=raw.get("timeout"), cwd=raw.get("cwd"),
        env={k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (raw.get("env") or {}).items()},
        env_passthrough=tuple(raw.get("env_passthrough", ())), host_env=bool(raw.get("host_env", True)),
        stdin=raw.get("stdin"),
        max_output=raw.get("max_output"), output=_output_shape(raw.get("output")), sandbox=_sandbox_needs(raw, file),
    )


def _output_shape(output: dict[str, Any] | None) -> OutputShape | None:
    if not output:
        return None
    return OutputShape(format=output.get("format", "text"), select=output.get("select"),
                       max_items=output.get("max_items"), schema=output.get("schema"), grep=output.get("grep"),
                       lines=output.get("lines"), head=output.get("head"), tail=output.get("tail"))


def _runner(raw: dict[str, Any], kind: str, file: Path, targeted: bool) -> Any:
    if kind == "entrypoint":
        return EntrypointRunner(raw["entrypoint"], base_dir=file.parent.resolve(), max_output=raw.get("max_output"),
                                timeout=raw.get("timeout"), sandbox=_sandbox_needs(raw, file),
                                passthrough=tuple(raw.get("env_passthrough", ())))
    properties = [*(raw.get("parameters") or {}).get("properties", {}), *([TARGET_PARAMETER] if targeted else [])]
    if kind == "script":
        return ScriptRunner(raw["script"], _process_options(raw, file), frozenset(properties),
                            frozenset(raw.get("allow_dash", ())))
    if kind == "pipeline":
        return PipelineRunner(raw["pipeline"], _process_options(raw, file), frozenset(raw.get("allow_dash", ())),
                              _maps(raw))
    return CommandRunner(raw["command"], _process_options(raw, file), frozenset(raw.get("allow_dash", ())), _maps(raw))


def _maps(raw: dict[str, Any]) -> dict[str, dict[str, list[str]]] | None:
    """``map:`` with its values' keys as text (YAML reads ``1:`` as a number), as the renderer looks them up."""
    maps = raw.get("map")
    if not maps:
        return None
    return {name: {scalar_text(value): list(items) for value, items in table.items()} for name, table in maps.items()}


__all__ = ["Host", "check_tools", "load_tool_file", "load_tools"]
