"""Checks of a ``command:`` argv template against the tool's parameters.

Everything here would otherwise fail, or misbehave, only when the tool runs: a placeholder naming no
parameter, an optional value outside a group (an empty argument), an array inside ``--type={x}``, a group
that would repeat over two arrays, enum values a dash rule refuses, a program that is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from nami_yaml.paths import path_for_messages
from nami_yaml.registry.code_args import code_placeholders
from nami_yaml.registry.defaults import has_default
from nami_yaml.registry.draft import ToolDraft, schema_types
from nami_yaml.registry.targets import OPTIONAL, TARGET_PARAMETER
from nami_yaml.runners.plan_step import PLAN_FILE
from nami_yaml.runners.template import (
    TARGET_PREFIX,
    ArgvPath,
    TemplateError,
    group_switches,
    is_element,
    parse,
    refs,
    repeating_refs,
    scalar_text,
    walk_argv,
    walk_groups,
)
from nami_yaml.spec.validate import did_you_mean, short
from nami_yaml.spec.yamlpos import format_path

_SHELL_TOKENS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "&", "2>&1"})
_PLAIN = re.compile(r"[A-Za-z0-9_./@%+=~^:-]+")




def template_refs(template: str) -> list[str]:
    try:
        return refs(template)
    except TemplateError:
        return []  # reported where the element itself is checked


def check_placeholders(draft: ToolDraft, where: tuple[str | int, ...], template: str, *,
                       argv: bool = False) -> list[str]:
    """Report a malformed template or a placeholder naming no parameter; return the names it uses. A
    negated ``{!name}`` is a switch of an argv group: anywhere else (stdin, output filters) it is refused."""
    try:
        names = refs(template)
        negated = [p.ref for p in parse(template) if p.negated]
    except TemplateError as exc:
        draft.error(where, str(exc))
        return []
    for name in negated if not argv else ():
        draft.error(where, f"{{!{name}}} switches an optional group of an argv on when '{name}' is not given; "
                           f"here it has no meaning: write {{{name}}}, or {{{{!{name}}}}} for the text itself")
    for name in names:
        if name == PLAN_FILE and ("plan" in draft.raw or name not in draft.properties):
            plan_file_problem(draft, where)
            continue
        if name.startswith(TARGET_PREFIX) or (name == TARGET_PARAMETER and draft.target_mode == OPTIONAL):
            continue  # the target checks report these (registry.target_checks)
        if name not in draft.properties:
            declared = ", ".join(draft.properties) or "none"
            hint = did_you_mean(name, list(draft.properties))
            if not hint and (not draft.properties or re.search(rf"[%$#@]\{{{re.escape(name)}\}}", template)):
                # No parameter it could be meant for, or a format's own braces (curl -w "%{http_code}").
                hint = (f"; or, for the program to get {{{name}}} itself, write {{{{{name}}}}} (braces are "
                        "escaped by doubling)")
            draft.error(where, f"placeholder {{{name}}} names no parameter (declared: {declared}){hint}")
    return names


def plan_file_problem(draft: ToolDraft, where: tuple[str | int, ...]) -> None:
    """``{plan_file}`` is the call's plan file: only in a command tool that declares ``plan:``, in its
    ``command:`` and ``plan:``, and only where the plan command writes it."""
    plan = draft.raw.get("plan")
    if not isinstance(plan, dict) or draft.runner_kind != "command" or not where or where[0] not in ("command", "plan"):
        draft.error(where, f"{{{PLAN_FILE}}} is the call's plan file: it may appear only in the command: and plan: "
                           "of a command tool that declares plan:")
    elif where[:2] != ("plan", "command") and not any(
            PLAN_FILE in template_refs(text) for _, text, _ in walk_argv(plan.get("command") or [])
            if isinstance(plan.get("command"), list)):
        draft.error(where, f"{{{PLAN_FILE}}} is written by the plan step: plan.command must name it too (e.g. "
                           f"[terraform, plan, -out, \"{{{PLAN_FILE}}}\"])")


def check_command_text(draft: ToolDraft) -> None:
    """``command: "git log {ref}"`` is a list written as one string: show the list it should be."""
    if draft.runner_kind == "command" and draft.runner_key and isinstance(draft.raw.get(draft.runner_key), str):
        draft.error((draft.runner_key,), _as_list_message(draft.raw[draft.runner_key]))


def _as_list_message(text: str) -> str:
    try:
        items = shlex.split(text)
    except ValueError:
        items = text.split()
    listing = "[" + ", ".join(_flow_item(item) for item in items) + "]"
    message = f"command is one string; write it as a list, one argument per item: {listing}"
    if any(item in _SHELL_TOKENS or "$(" in item or "`" in item for item in items):
        message += " (no shell runs a command: for pipes, redirections or && use script:)"
    return message


def _flow_item(item: str) -> str:
    """``item`` as it would be written in a YAML flow list: bare when YAML reads it back unchanged."""
    if _PLAIN.fullmatch(item):
        try:
            if yaml.safe_load(f"[{item}]") == [item]:
                return item
        except yaml.YAMLError:
            pass
    return json.dumps(item, ensure_ascii=False)


def check_command(draft: ToolDraft) -> None:
    for key, argv in draft.argvs:
        _check_argv(draft, key, argv)


def _check_argv(draft: ToolDraft, key: tuple[str | int, ...], argv: list[Any]) -> None:
    repeating = _repeating_groups(draft, argv)
    starts: dict[str, tuple[str | int, ...]] = {}
    for index_path, template, depth in walk_argv(argv):
        where = (*key, *index_path)
        names = check_placeholders(draft, where, template, argv=True)
        try:
            pieces = parse(template)
        except TemplateError:
            continue
        if _check_negated(draft, where, pieces, depth):
            continue
        whole = len(pieces) == 1 and pieces[0].ref is not None
        repeated = set().union(*(repeating.get(index_path[:n], set()) for n in range(1, len(index_path))))
        if pieces and pieces[0].ref in draft.properties:
            starts.setdefault(pieces[0].ref, where)
        for name in dict.fromkeys(names):
            if name not in draft.properties:
                continue
            _check_use(draft, where, name, whole=whole, depth=depth, repeated=name in repeated, template=template)
    _check_groups(draft, key, argv, repeating)
    _check_dash_values(draft, starts)


def _check_negated(draft: ToolDraft, where: tuple[str | int, ...], pieces: list[Any], depth: int) -> bool:
    """``{!name}`` must be a whole element of a group (it renders nothing, only switches the group); True
    when the element is one, which needs no other check."""
    negated = [p.ref for p in pieces if p.negated]
    if not negated:
        return False
    name = negated[0]
    if len(pieces) > 1:
        draft.error(where, f"{{!{name}}} renders nothing, it only switches its group on when '{name}' is off: "
                           f"write it as an element of its own, e.g. [-A, \"{{!{name}}}\"]")
    elif depth == 0:
        draft.error(where, f"{{!{name}}} switches an optional group on when '{name}' is off: put it in one, "
                           f"e.g. [-A, \"{{!{name}}}\"]")
    schema = draft.schema_of(name)
    if has_default(schema) and schema.get("default") not in (None, False, []):
        draft.warn(where, f"{{!{name}}} never switches its group on: '{name}' has the default "
                          f"{short(schema['default'])}, so it is never off")
    return len(pieces) == 1


def _check_use(draft: ToolDraft, where: tuple[str | int, ...], name: str, *, whole: bool, depth: int,
               repeated: bool, template: str) -> None:
    schema = draft.schema_of(name)
    types = schema_types(schema)
    if depth == 0 and name not in draft.required and not has_default(schema):
        draft.error(where, f"'{name}' is optional with no default: put it in an optional group "
                           f"(a nested list, e.g. [--flag, \"{{{name}}}\"]) or give it a default")
    if depth == 0 and whole and types == {"boolean"}:
        draft.error(where, f"boolean '{name}' can only switch an optional group, e.g. [--{name}, \"{{{name}}}\"]")
    # Only when every type it may take is a container: `type: [string, array]` may be fine at run time.
    containers = types & {"array", "object"}
    if not containers or not types <= {"array", "object", "null"}:
        return
    if containers == {"object"}:
        draft.error(where, f"'{name}' is an object, which cannot {'fill' if whole else 'be part of'} an argument; "
                           f"pass it on stdin (stdin: \"{{{name}}}\" sends it as JSON) or split it into parameters")
    elif not whole and not repeated:
        draft.error(where, _partial_message(name, template))


def _partial_message(name: str, template: str) -> str:
    prefix = template.split("{" + name + "}", 1)[0]
    flag = prefix[:-1] if prefix.endswith("=") and prefix.startswith("-") else None
    if flag:
        return (f"'{name}' is an array, which cannot be part of an argument; write [{flag}, \"{{{name}}}\"] "
                f"to repeat {flag} once per item (or [\"{template}\"] for {flag}=ITEM per item)")
    return (f"'{name}' is an array, which cannot be part of an argument; make \"{{{name}}}\" a whole element "
            f"(one argument per item), or put it in an optional group to repeat the group per item")


def _repeating_groups(draft: ToolDraft, argv: list[Any]) -> dict[ArgvPath, set[str]]:
    """The array parameters each group repeats over (those written directly in it, whole or in an element
    such as ``--label={names}``)."""
    return {path: {n for n in repeating_refs_safe(group) if "array" in schema_types(draft.schema_of(n))}
            for path, group in walk_groups(argv)}


def _check_groups(draft: ToolDraft, key: tuple[str | int, ...], argv: list[Any], repeating: dict[ArgvPath, set[str]]) -> None:
    for path, group in walk_groups(argv):
        try:
            switched = bool(group_switches(group))
        except TemplateError:
            switched = True  # the malformed element is reported on its own
        if not switched:
            draft.error((*key, *path), "an optional group needs a {parameter} of its own that switches it on")
        arrays = list(dict.fromkeys(n for n in repeating_refs_safe(group) if n in repeating[path]))
        if len(arrays) > 1:
            listed = " and ".join(f"'{name}'" for name in arrays)
            draft.error((*key, *path), f"an optional group repeats once per item of one array; {listed} are both "
                                      f"arrays: put each in a group of its own")


def repeating_refs_safe(group: list[Any]) -> list[str]:
    try:
        return repeating_refs(group)
    except TemplateError:
        return []


def _dash_values(draft: ToolDraft, name: str) -> list[tuple[tuple[str | int, ...], str, Any]]:
    """(path, what, value) of the values of ``name`` the author chose that would start with '-'."""
    schema = draft.schema_of(name)
    found: list[tuple[tuple[str | int, ...], str, Any]] = []

    def add(path: tuple[str | int, ...], what: str, value: Any) -> None:
        if _starts_with_dash(value):
            found.append((draft.parameter_path(name, *path), what, value))

    for node, base in ((schema, ()), (schema.get("items"), ("items",))):
        if not isinstance(node, dict):
            continue
        enum = node.get("enum")
        for index, value in enumerate(enum if isinstance(enum, list) else []):
            add((*base, "enum", index), "enum value", value)
        if "const" in node:
            add((*base, "const"), "const", node["const"])
    default = schema.get("default")
    if isinstance(default, list):
        for index, value in enumerate(default):
            add(("default", index), "default item", value)
    elif has_default(schema):
        add(("default",), "default", default)
    return found


def _starts_with_dash(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return (isinstance(value, str) and value.startswith("-")) or (isinstance(value, (int, float)) and value < 0)


def _check_dash_values(draft: ToolDraft, starts: dict[str, tuple[str | int, ...]]) -> None:
    maps = draft.raw.get("map")
    allowed = set(draft.strings("allow_dash")) | (set(maps) if isinstance(maps, dict) else set())
    for name, where in starts.items():
        if name in allowed:
            continue
        element = format_path((*draft.where, *where))
        for path, what, value in _dash_values(draft, name):
            draft.error(path, f"{what} {short(value)} starts with '-', so it is always refused where {{{name}}} "
                              f"starts an argument ({element}); list '{name}' in allow_dash if it may")


def check_maps(draft: ToolDraft) -> None:
    """``map:`` names parameters with an enum, maps every enum value (and nothing else) to elements, and each
    mapped parameter fills whole argv elements only (its value becomes the mapped elements)."""
    maps = draft.raw.get("map")
    if not isinstance(maps, dict):
        return
    if draft.runner_kind not in ("command", "pipeline"):
        draft.error(("map",), f"map: picks the argv elements of a command: or pipeline:; a {draft.runner_kind} tool "
                              "has none", key=True)
        return
    for name, table in maps.items():
        if name not in draft.properties:
            hint = did_you_mean(str(name), list(draft.properties))
            draft.error(("map", name), f"map: names '{name}', which is not a parameter{hint}", key=True)
            continue
        enum = draft.schema_of(name).get("enum")
        if not isinstance(table, dict):
            continue  # the schema reports it
        if not isinstance(enum, list):
            draft.error(("map", name), f"'{name}' has no enum: map: needs the values a call may pass listed "
                                       f"(enum: [{', '.join(map(str, table))}]), so that each has its elements", key=True)
            continue
        values = {scalar_text(value) for value in enum}
        for value in enum:
            if scalar_text(value) not in {scalar_text(key) for key in table}:
                draft.error(("map", name), f"enum value {short(value)} of '{name}' is not mapped: add "
                                           f"{scalar_text(value)}: [...] (the elements it becomes)", key=True)
        for key in table:
            if scalar_text(key) not in values:
                draft.error(("map", name, key), f"'{key}' is not one of '{name}''s enum values "
                                                f"({', '.join(sorted(values))}): no call can pass it", key=True)
    for key, argv in draft.argvs:
        for index_path, template, _ in walk_argv(argv):
            try:
                pieces = parse(template)
            except TemplateError:
                continue
            for piece in pieces:
                if piece.ref in maps and not piece.negated and len(pieces) > 1:
                    draft.error((*key, *index_path), f"'{piece.ref}' is mapped (map:), so it fills whole elements "
                                                     f"only: write \"{{{piece.ref}}}\" as an element of its own")


def check_script_dash(draft: ToolDraft) -> None:
    """A script refuses every value starting with '-' of a parameter not in allow_dash (runners/script.py):
    such an enum value, const or default could never pass."""
    if draft.runner_kind != "script":
        return
    allowed = set(draft.strings("allow_dash"))
    for name in draft.properties:
        if name in allowed:
            continue
        for path, what, value in _dash_values(draft, name):
            draft.error(path, f"{what} {short(value)} starts with '-', so a script tool always refuses it "
                              f"(it would reach the script's programs as an option); list '{name}' in "
                              "allow_dash if it may")


def command_refs(argv: list[Any]) -> set[str]:
    return {name for _, template, _ in walk_argv(argv) for name in template_refs(template)}


def check_program(draft: ToolDraft) -> None:
    """Warn when a program is not installed here: the machine that runs the tool may still have it."""
    for key, argv in draft.argvs:
        _check_program(draft, key, argv)


def _check_program(draft: ToolDraft, key: tuple[str | int, ...], argv: list[Any]) -> None:
    host = draft.host
    if host is None or not argv or not is_element(argv[0]):
        return
    program = str(argv[0])
    if template_refs(program) or "{" in program:
        return
    where = (*key, 0)
    if os.sep in program:
        cwd = draft.text("cwd") or "."
        target = Path(program) if os.path.isabs(program) else host.workspace / cwd / program
        if not (target.is_file() and os.access(target, os.X_OK)):
            draft.warn(where, f"program {program} is not an executable file here ({path_for_messages(target)})")
    elif host.which(program) is None:
        draft.warn(where, f"program '{program}' is not found on PATH here (the machine that runs the tool "
                          f"needs it)")


def check_code_arguments(draft: ToolDraft) -> None:
    """``[sh, -c, "echo {x}"]`` is shell injection by the author's hand: refused, pointing to ``script:``."""
    elements = [((*key, *where), template) for key, argv in draft.argvs for where, template, _ in walk_argv(argv)]
    for where, message in code_placeholders(elements, draft.properties):
        draft.error(where, message)

