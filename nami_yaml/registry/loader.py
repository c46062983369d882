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
from nami_yaml.registry.checks import MACHINE_CHECKS, TOOL_CHECKS
from nami_yaml.registry.draft import Host, ToolDraft, known_tool_keys
from nami_yaml.registry.shared_parts import DEFAULTS_KEY, DEFS_KEY, check_shared, completed
from nami_yaml.registry.targets import TARGET_PARAMETER, with_target_parameter
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.entrypoint import EntrypointRunner
from nami_yaml.runners.options import DocSource, OutputShape, ProcessOptions
from nami_yaml.runners.pipeline import PipelineRunner
from nami_yaml.runners.plan_step import PlanSpec
from nami_yaml.runners.script import ScriptRunner
from nami_yaml.runners.template import scalar_text
from nami_yaml.runtime import TargetSet
from nami_yaml.sandbox_settings import SandboxNeeds
from nami_yaml.spec import validated_cache
from nami_yaml.spec.fastcheck import tool_surely_valid
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, Source, read_file

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
    validated_cache.save()
    return tools, problems


def _load_file(path: Path, builtin: bool, host: Host | None, targets: TargetSet,
               ) -> tuple[list[_Found], list[Problem]]:
    try:
        source = read_file(path)
    except (OSError, ValueError) as exc:
        return [], [Problem(path_for_messages(path), 1, 1, "$", f"cannot read tool file: {exc}")]
    if not builtin:  # nami's own files are part of its code: read as they are
        known = validated_cache.lookup(path, source.digest)
        found = None if known is None else _known_tools(source, known, path, host, targets)
        if found is not None:
            return found, []
    doc, problems = source.parsed()
    if doc is None:
        return [], problems
    found = []
    places: list[validated_cache.Place] = []
    on_targets = False
    entries = _entries(doc, problems)
    for where, entry in entries:
        shared_problems: list[Problem] = []  # the tool's own: they keep it from loading
        if where:
            entry = completed(doc, doc.value, where, entry, known_tool_keys(), shared_problems)
        draft = ToolDraft(doc, where, entry, path, problems, host, targets, of_nami=builtin)
        tool = _build_tool(draft, builtin, shared_problems)
        on_targets = on_targets or draft.target_mode is not None
        if tool is not None:
            found.append(_Found(tool, doc.problem((*where, "name"), "")))
            places.append((*doc.position(where), *doc.position((*where, "name"))))
    if not builtin and entries and not problems and not on_targets:
        # Nothing to say about it, and nothing of it depends on the project's targets: kept as valid.
        validated_cache.remember(path, source.digest, doc.value, places)
    return found, problems


def _known_tools(source: Source, known: validated_cache.Validated, path: Path, host: Host | None,
                 targets: TargetSet) -> list[_Found] | None:
    """The tools of a file the cache knows valid, built without parsing or checking it again; only what
    depends on this machine and the files beside it is checked (``host``: the checks of this machine). None
    when those find anything, or the entry does not fit the file: then the file is parsed and checked whole."""
    value = known.value
    entries = _plain_entries(value)
    if entries is None or len(entries) != len(known.places):
        return None
    doc = Document(source.file, value)
    for (where, _), (line, col, name_line, name_col) in zip(entries, known.places, strict=True):
        doc.positions[where] = (line, col)
        doc.positions[(*where, "name")] = (name_line, name_col)
    problems: list[Problem] = []
    found = []
    for where, entry in entries:
        if where:
            entry = completed(doc, value, where, entry, known_tool_keys(), problems)
        draft = ToolDraft(doc, where, entry, path, problems, host, targets)
        if host is not None:
            for check in MACHINE_CHECKS:
                check(draft)
        tool = _made(draft, False, 0)
        if tool is None or problems:
            return None
        found.append(_Found(tool, doc.problem((*where, "name"), "")))
    return found


def _plain_entries(value: Any) -> list[tuple[JsonPath, dict[str, Any]]] | None:
    """The tool mappings of a valid file's value with their paths (as ``_entries`` finds them)."""
    if not isinstance(value, dict):
        return None
    if "tools" not in value:
        return [((), value)]
    listed = value["tools"]
    if not isinstance(listed, list) or not all(isinstance(entry, dict) for entry in listed):
        return None
    return [(("tools", index), entry) for index, entry in enumerate(listed)]


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
    if not draft.of_nami and not tool_surely_valid(shown):
        draft.problems.extend(problems_for(draft.doc, shown, draft.where, validator("tool", "tool")))
    for check in TOOL_CHECKS:
        check(draft)
    return _made(draft, builtin, before)


def _made(draft: ToolDraft, builtin: bool, before: int) -> Tool | None:
    """The Tool of a checked draft, unless its checks (``draft.problems`` from ``before`` on) or its ``docs:``
    found an error."""
    raw = draft.raw
    docs = _docs(draft)
    if any(p.is_error for p in draft.problems[before:]):
        return None
    parameters = draft.parameters
    if draft.targeted:
        parameters = with_target_parameter(parameters, draft.targets)
    parameters = _normalized(parameters)
    line, col = draft.doc.position(draft.where)
    runner = _runner(raw, draft.runners[0], draft.file, draft.doc.file, draft.targeted)
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
        return DocSource(command=tuple(str(part) for part in docs), options=_process_options(draft.raw, draft.doc.file))
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


def _sandbox_needs(raw: dict[str, Any], origin: str) -> SandboxNeeds:
    """``origin``: the tool file, as messages name it."""
    return SandboxNeeds.from_mapping(raw.get("sandbox"), origin=origin)


def _process_options(raw: dict[str, Any], origin: str) -> ProcessOptions:
    return ProcessOptions(
        timeout=raw.get("timeout"), cwd=raw.get("cwd"),
        env={k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (raw.get("env") or {}).items()},
        env_passthrough=tuple(raw.get("env_passthrough", ())), host_env=bool(raw.get("host_env", True)),
        stdin=raw.get("stdin"),
        max_output=raw.get("max_output"), output=_output_shape(raw.get("output")), sandbox=_sandbox_needs(raw, origin),
    )


def _output_shape(output: dict[str, Any] | None) -> OutputShape | None:
    if not output:
        return None
    return OutputShape(format=output.get("format", "text"), select=output.get("select"),
                       max_items=output.get("max_items"), schema=output.get("schema"), grep=output.get("grep"),
                       lines=output.get("lines"), head=output.get("head"), tail=output.get("tail"))


def _runner(raw: dict[str, Any], kind: str, file: Path, origin: str, targeted: bool) -> Any:
    if kind == "entrypoint":
        return EntrypointRunner(raw["entrypoint"], base_dir=file.parent.resolve(), max_output=raw.get("max_output"),
                                timeout=raw.get("timeout"), sandbox=_sandbox_needs(raw, origin),
                                passthrough=tuple(raw.get("env_passthrough", ())))
    properties = [*(raw.get("parameters") or {}).get("properties", {}), *([TARGET_PARAMETER] if targeted else [])]
    if kind == "script":
        return ScriptRunner(raw["script"], _process_options(raw, origin), frozenset(properties),
                            frozenset(raw.get("allow_dash", ())))
    if kind == "pipeline":
        return PipelineRunner(raw["pipeline"], _process_options(raw, origin), frozenset(raw.get("allow_dash", ())),
                              _maps(raw))
    return CommandRunner(raw["command"], _process_options(raw, origin), frozenset(raw.get("allow_dash", ())),
                         _maps(raw), plan=_plan_spec(raw.get("plan")))


def _plan_spec(plan: dict[str, Any] | None) -> PlanSpec | None:
    """``plan:`` (checked by the schema and registry/plan_checks.py)."""
    if not plan:
        return None
    show = plan.get("show")
    return PlanSpec(command=tuple(plan["command"]), show=tuple(show) if show else None, timeout=plan.get("timeout"),
                    exit_codes=tuple(plan.get("exit_codes") or (0,)))


def _maps(raw: dict[str, Any]) -> dict[str, dict[str, list[str]]] | None:
    """``map:`` with its values' keys as text (YAML reads ``1:`` as a number), as the renderer looks them up."""
    maps = raw.get("map")
    if not maps:
        return None
    return {name: {scalar_text(value): list(items) for value, items in table.items()} for name, table in maps.items()}


__all__ = ["Host", "check_tools", "load_tool_file", "load_tools"]
