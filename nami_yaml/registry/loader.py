"""Tool YAML files -> validated Tools. Collects every problem; executes and imports nothing."""

from __future__ import annotations

import contextlib
import glob as globlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from nami_yaml.errors import Problem
from nami_yaml.registry.code_args import code_placeholders
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.base import ProcessOptions
from nami_yaml.runners.command import CommandRunner
from nami_yaml.runners.entrypoint import CONTEXT_PARAMETER, EntrypointRunner
from nami_yaml.runners.script import ScriptRunner, parameter_name_problem
from nami_yaml.runners.template import TemplateError, parse, refs, walk_argv
from nami_yaml.spec.fastcheck import parameters_surely_valid, tool_surely_valid
from nami_yaml.spec.validate import did_you_mean, problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, parse_yaml, read_source

RUNNER_KEYS = ("command", "script", "entrypoint")
TOOL_SUFFIXES = (".yaml", ".yml")


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def expand_tool_paths(spec: str, base: Path) -> list[Path]:
    """A file, a folder (its *.yaml/*.yml files, recursively, hidden folders skipped) or a glob."""
    target = Path(os.path.expanduser(spec))
    target = target if target.is_absolute() else base / target
    if any(ch in spec for ch in "*?["):
        return sorted(Path(p) for p in globlib.glob(str(target), recursive=True) if Path(p).is_file())
    if target.is_dir():
        found = []
        for root, dirs, files in os.walk(target):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            found.extend(Path(root) / f for f in sorted(files) if f.endswith(TOOL_SUFFIXES))
        return found
    return [target] if target.exists() else []


@cache
def _meta_validator() -> Draft202012Validator:
    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


@dataclass
class _Context:
    doc: Document
    path: JsonPath
    problems: list[Problem]

    def add(self, sub: JsonPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem((*self.path, *sub), message, key=key))


def load_tool_file(path: Path, *, builtin: bool = False) -> tuple[list[Tool], list[Problem]]:
    located, problems = _load_file(path, builtin)
    return [tool for tool, _ in located], problems


def _load_file(path: Path, builtin: bool) -> tuple[list[tuple[Tool, Problem]], list[Problem]]:
    """The tools of one file, each with the place of its ``name`` (for duplicate-name reports)."""
    name = display_path(path)
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        return [], [Problem(name, 1, 1, "$", f"cannot read tool file: {exc}")]
    doc, problems = parse_yaml(text, name)
    if doc is None:
        return [], problems
    value = doc.value
    if not isinstance(value, dict):
        found = "an empty file" if value is None else f"a {type(value).__name__}"
        return [], [*problems, doc.problem((), f"a tool file holds a tool (a mapping) or `tools:` with a list; found {found}")]
    if "tools" in value:
        for key in value:
            if key != "tools":
                problems.append(doc.problem((key,), f"unknown key '{key}' next to `tools:`; "
                                                    "put it inside a tool of the list", key=True))
        listed = value["tools"]
        if not isinstance(listed, list) or not listed:
            problems.append(doc.problem(("tools",), "`tools:` must be a non-empty list of tools"))
            listed = []
        entries = []
        for index, entry in enumerate(listed):
            if isinstance(entry, dict):
                entries.append((("tools", index), entry))
            else:
                problems.append(doc.problem(("tools", index), "each item of `tools:` must be a tool (a mapping)"))
    else:
        entries = [((), value)]
    tools = []
    for where, entry in entries:
        tool = _build_tool(_Context(doc, where, problems), entry, path, builtin)
        if tool is not None:
            tools.append((tool, doc.problem((*where, "name"), "")))
    return tools, problems


def _build_tool(c: _Context, raw: dict[str, Any], file: Path, builtin: bool) -> Tool | None:
    before = len(c.problems)
    if not tool_surely_valid(raw):
        c.problems.extend(problems_for(c.doc, raw, c.path, validator("tool", "tool")))
    runners = [key for key in RUNNER_KEYS if key in raw]
    if not runners:
        c.add((), "missing runner: a tool needs one of command, script or entrypoint")
    elif len(runners) > 1:
        c.add((runners[1],), f"a tool has exactly one runner; found {' and '.join(runners)}", key=True)
    parameters = raw.get("parameters", {"type": "object", "properties": {}})
    if isinstance(parameters, dict):
        _check_parameters(c, parameters)
    if len(c.problems) > before:
        return None
    parameters = _normalized(parameters)
    properties: dict[str, Any] = parameters.get("properties", {})
    for name in raw.get("allow_dash", []):
        if name not in properties:
            c.add(("allow_dash",), f"allow_dash names '{name}', which is not a parameter{did_you_mean(name, list(properties))}")
    for name in raw.get("writes", []):
        if name not in properties:
            c.add(("writes",), f"writes names '{name}', which is not a parameter{did_you_mean(name, list(properties))}")
    cwd = raw.get("cwd")
    if cwd is not None and ("{" in cwd or os.path.isabs(cwd)):
        c.add(("cwd",), "cwd is a fixed folder relative to the workspace (no placeholders, not absolute)")
    runner = _runner(c, raw, runners[0], parameters, file)
    if runner is None or len(c.problems) > before:
        return None
    if builtin and isinstance(runner, EntrypointRunner):
        runner = replace(runner, base_dir=None)  # nami's own package: imported normally, not a tool folder
    line, col = c.doc.position(c.path)
    return Tool(
        name=raw["name"], description=raw["description"].strip(), parameters=parameters,
        risk=raw.get("risk", "exec"), runner=runner, source=f"{c.doc.file}:{line}:{col}", builtin=builtin,
        writes=tuple(raw.get("writes", ())),
    )


def _check_parameters(c: _Context, parameters: dict[str, Any]) -> None:
    meta_errors = [] if parameters_surely_valid(parameters) else _meta_validator().iter_errors(parameters)
    for error in meta_errors:
        # `type: strin` fails an anyOf; its enum branch says what was meant, the wrapper does not.
        leaf = best_match(error.context) if error.context else error
        hint = ""
        if leaf.validator == "enum" and isinstance(leaf.instance, str):
            hint = did_you_mean(leaf.instance, [str(v) for v in leaf.validator_value])
        c.add(("parameters", *error.absolute_path), f"not a valid JSON Schema: {leaf.message}{hint}")
    if parameters.get("type") != "object":
        c.add(("parameters",), "parameters must be a schema of `type: object` (the arguments are one object)")
    properties = parameters.get("properties", {})
    if isinstance(properties, dict):
        for name in parameters.get("required", []) or []:
            if isinstance(name, str) and name not in properties:
                c.add(("parameters", "required"), f"required parameter '{name}' is not declared in properties")
    _check_local_refs(c, parameters)


REF_KEYWORDS = ("$ref", "$dynamicRef")
# Keywords whose values are data, never schemas: a "$ref" key inside them is just a key.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Keywords whose values map names to schemas: the names are not keywords (a property may be called "enum").
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def non_local_refs(schema: Any, path: JsonPath = ()) -> list[tuple[JsonPath, str]]:
    """Every ``$ref``/``$dynamicRef`` in ``schema`` that does not start with ``#``, with its path."""
    found: list[tuple[JsonPath, str]] = []
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            found.extend(non_local_refs(item, (*path, index)))
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key in REF_KEYWORDS:
                if isinstance(value, str) and not value.startswith("#"):  # a non-string fails the metaschema
                    found.append(((*path, key), str(value)))
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    found.extend(non_local_refs(sub, (*path, key, name)))
            elif key not in _DATA_KEYWORDS:
                found.extend(non_local_refs(value, (*path, key)))
    return found


def _check_local_refs(c: _Context, parameters: dict[str, Any]) -> None:
    """Only ``#/...`` references: a URL or file reference would make validating a model's arguments read
    a file or the network (jsonschema retrieves them), from a schema an untrusted repository wrote."""
    for where, ref in non_local_refs(parameters, ("parameters",)):
        c.add(where, f"{where[-1]} {ref!r} points outside this schema; only local references (#/...) are "
                     "allowed, so validating arguments never reads a file or the network")


def _normalized(parameters: dict[str, Any]) -> dict[str, Any]:
    """Unknown argument keys are refused unless the author allows them explicitly, and the model is told."""
    if "additionalProperties" in parameters:
        return parameters
    return {**parameters, "additionalProperties": False}


def _process_options(raw: dict[str, Any]) -> ProcessOptions:
    return ProcessOptions(
        timeout=raw.get("timeout"), cwd=raw.get("cwd"),
        env={k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (raw.get("env") or {}).items()},
        env_passthrough=tuple(raw.get("env_passthrough", ())), stdin=raw.get("stdin"),
        max_output=raw.get("max_output"),
    )


def _runner(c: _Context, raw: dict[str, Any], kind: str, parameters: dict[str, Any], file: Path) -> Any:
    properties: dict[str, Any] = parameters.get("properties", {})
    if kind == "entrypoint":
        if CONTEXT_PARAMETER in properties:
            c.add(("parameters", "properties", CONTEXT_PARAMETER),
                  f"'{CONTEXT_PARAMETER}' is reserved for entry points: it receives nami's runtime context", key=True)
        return EntrypointRunner(raw["entrypoint"], base_dir=file.parent.resolve(), max_output=raw.get("max_output"))
    options = _process_options(raw)
    if options.stdin is not None:
        _check_template_refs(c, ("stdin",), options.stdin, properties)
    if kind == "script":
        for name in properties:
            problem = parameter_name_problem(name)
            if problem:
                c.add(("parameters", "properties", name), problem, key=True)
        return ScriptRunner(raw["script"], options, frozenset(properties))
    _check_command(c, raw["command"], parameters)
    return CommandRunner(raw["command"], options, frozenset(raw.get("allow_dash", ())))


def _check_template_refs(c: _Context, where: JsonPath, template: str, properties: dict[str, Any]) -> list[str]:
    try:
        names = refs(template)
    except TemplateError as exc:
        c.add(where, str(exc))
        return []
    for name in names:
        if name not in properties:
            hint = did_you_mean(name, list(properties))
            declared = ", ".join(properties) or "none"
            c.add(where, f"placeholder {{{name}}} names no parameter (declared: {declared}){hint}")
    return names


def _check_command(c: _Context, argv: list[Any], parameters: dict[str, Any]) -> None:
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []) or [])
    used: set[str] = set()
    stdin = _stdin_of(c)
    if stdin:
        with contextlib.suppress(TemplateError):  # reported where stdin itself is checked
            used.update(refs(stdin))
    for index_path, template, depth in _indexed_argv(argv):
        where = ("command", *index_path)
        names = _check_template_refs(c, where, template, properties)
        used.update(names)
        whole = len(names) == 1 and _is_whole(template)
        for name in names:
            schema = properties.get(name)
            if not isinstance(schema, dict):
                continue
            if depth == 0 and name not in required and "default" not in schema:
                c.add(where, f"'{name}' is optional with no default: put it in an optional group "
                             f"(a nested list, e.g. [--flag, \"{{{name}}}\"]) or give it a default")
            if depth == 0 and whole and schema.get("type") == "boolean":
                c.add(where, f"boolean '{name}' can only switch an optional group, e.g. [--{name}, \"{{{name}}}\"]")
    for group_path, group in _groups(argv):
        direct = [str(x) for x in group if not isinstance(x, list)]
        try:
            switched = any(refs(t) for t in direct)
        except TemplateError:
            switched = True
        if not switched:
            c.add(("command", *group_path), "an optional group needs a {parameter} of its own that switches it on")
    for name in sorted(required - used):
        c.add(("parameters", "properties", name), f"required parameter '{name}' is never used by the command or stdin", key=True)
    _check_code_arguments(c, argv, properties)


def _check_code_arguments(c: _Context, argv: list[Any], properties: dict[str, Any]) -> None:
    """``[sh, -c, "echo {x}"]`` is shell injection by the author's hand: refused, pointing to ``script:``."""
    elements = [(("command", *where), template) for where, template, _ in _indexed_argv(argv)]
    for where, message in code_placeholders(elements, properties):
        c.add(where, message)


def _stdin_of(c: _Context) -> str | None:
    node = c.doc.value
    for part in c.path:
        node = node[part]
    stdin = node.get("stdin") if isinstance(node, dict) else None
    return stdin if isinstance(stdin, str) else None


def _is_whole(template: str) -> bool:
    try:
        pieces = parse(template)
    except TemplateError:
        return False
    return len(pieces) == 1 and pieces[0].ref is not None


def _indexed_argv(items: list[Any], prefix: JsonPath = (), depth: int = 0):
    for index, item in enumerate(items):
        if isinstance(item, list):
            yield from _indexed_argv(item, (*prefix, index), depth + 1)
        else:
            yield (*prefix, index), str(item), depth


def _groups(items: list[Any], prefix: JsonPath = ()):
    for index, item in enumerate(items):
        if isinstance(item, list):
            yield (*prefix, index), item
            yield from _groups(item, (*prefix, index))


def load_tools(files: Iterable[Path], *, builtin: Iterable[Path] = ()) -> tuple[list[Tool], list[Problem]]:
    """Load many files (``builtin`` ones are marked so); a name defined twice is reported with both places."""
    builtin_files = set(builtin)
    tools: list[Tool] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for file in files:
        loaded, found = _load_file(file, file in builtin_files)
        problems.extend(found)
        for tool, at in loaded:
            if tool.name in seen:
                problems.append(replace(at, message=f"duplicate tool name '{tool.name}': also defined at {seen[tool.name]}"))
                continue
            seen[tool.name] = f"{at.file}:{at.line}:{at.col}"
            tools.append(tool)
    return tools, problems


__all__ = ["expand_tool_paths", "load_tool_file", "load_tools", "walk_argv"]
