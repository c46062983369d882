"""A tool drafted from a CLI's own help text (``PROGRAM [SUB…] --help``, ``-h``, ``help SUB``), then checked
against that text: every option the draft emits must be one the help lists.

Help text is plain prose laid out in columns, not a template language, so it is read line by line: an
option line starts with ``-``, its names and value placeholder come before the first run of two spaces,
its description after (or on the next, deeper indented line, as git and man pages write it). The usage
line gives the positional arguments (``[FILE]...``, ``<url>``).

Which options make the draft (a small tool is a useful one; ``--option`` picks them by hand instead): in
the order the help lists them (authors put the common ones first), up to ``max_options``, leaving out
those that would make a read tool write, run or wait (output files, editors, pagers, colour, config files,
help and version, verbosity), and valued options whose value is a file (what a tool reads and writes is the
workspace's business, not a flag's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.importers.common import Imported, risk_and_sandbox, tool_name

SKIPPED_WORDS = ("output", "file", "exec", "edit", "pager", "color", "colour", "help", "version", "verbose",
                 "debug", "config", "interactive", "sync", "upload", "delete", "remove", "write", "force",
                 "in-place", "log-file", "template", "trace", "dump", "socket", "proxy", "password", "user",
                 "cookie", "cert", "key", "token", "netrc", "null-data", "tty", "watch", "follow", "wait")
# Descriptions of options that send, write or upload: not for a drafted read tool.
SKIPPED_DESCRIPTIONS = re.compile(r"\bwrite\b.*\bfile|\bPOST\b|\bupload|\bdelete|\bNUL\b", re.IGNORECASE)
FILE_METAVARS = re.compile(r"file|path|dir|<f>$|^f$", re.IGNORECASE)
INTEGER_METAVARS = re.compile(r"^<?(n|num|number|int|count|lines|depth|max|seconds|secs|level)>?$", re.IGNORECASE)
PLACEHOLDER_WORDS = {"option", "options", "options...", "option...", "command", "args"}


@dataclass(frozen=True)
class HelpOption:
    spelling: str  # what the draft passes: --all, or -r
    metavar: str | None  # None: a flag
    description: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Positional:
    name: str
    optional: bool
    repeated: bool
    after_dashes: bool = False


@dataclass
class Draft:
    imported: Imported
    options: list[HelpOption] = field(default_factory=list)
    positionals: list[Positional] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)  # options asked for that the help does not list


def parse_options(help_text: str) -> list[HelpOption]:
    """Every option line of the help, in order; the first spelling of a name wins."""
    found: dict[str, HelpOption] = {}
    lines = help_text.expandtabs(8).splitlines()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("-") or stripped.startswith("--- ") or stripped == "--":
            continue
        parts = re.split(r"\s{2,}", stripped, maxsplit=1)
        spec, description = parts[0], parts[1] if len(parts) > 1 else ""
        if not description and index + 1 < len(lines):
            following = lines[index + 1]
            indent = len(following) - len(following.lstrip())
            if following.strip() and not following.strip().startswith("-") and indent > len(line) - len(stripped):
                description = following.strip()
        option = _option(spec, description.strip())
        if option is not None and option.spelling not in found:
            found[option.spelling] = option
    return list(found.values())


def _option(spec: str, description: str) -> HelpOption | None:
    names, metavar = [], None
    for token in re.split(r",\s*|\s+", spec.strip()):
        if not token:
            continue
        if token.startswith("--") and len(token) > 2:
            name, equals, value = token.partition("=")
            if name.endswith("["):  # --output[=FIELD_LIST]: an optional value, left out
                return None
            if "[" in name:
                return None
            names.append(name)
            if equals:
                metavar = value
        elif re.fullmatch(r"-[A-Za-z0-9]", token):
            names.append(token)
        elif names and metavar is None and not token.startswith("-"):
            if token.startswith("[="):
                return None
            metavar = token
        else:
            break
    if not names:
        return None
    longs = [n for n in names if n.startswith("--")]
    choices: tuple[str, ...] = ()
    if metavar:
        inner = metavar.strip("<>{}[]")
        separator = "|" if "|" in inner else "," if metavar.startswith("{") else ""
        if separator:
            choices = tuple(c for c in inner.split(separator) if re.fullmatch(r"[\w.-]+", c))
    return HelpOption(longs[0] if longs else names[0], metavar, description, choices)


def parse_usage(help_text: str, program: str, subs: Sequence[str]) -> list[Positional]:
    """The positional arguments of the first usage line naming the program (and its subcommands)."""
    words = " ".join([program, *subs])
    previous = ""
    for line in help_text.splitlines():
        text = re.sub(r"^\s*(usage|or):\s*", "", line.strip(), flags=re.IGNORECASE)
        labelled = text != line.strip() or previous.lower() == "usage:"
        previous = line.strip() or previous
        if labelled and text.startswith(words):
            return _positionals(text[len(words):])
    return []


def _positionals(text: str) -> list[Positional]:
    found: list[Positional] = []
    seen_dashes = False
    pattern = re.compile(r"(\[*)(--\]?\s*)?(<[^>]+>|[A-Z][A-Z_]*[A-Z]|[a-z]+(?=\.\.\.))(\.\.\.)?\]*(\.\.\.)?")
    for match in pattern.finditer(text):
        opening, dashes, raw, dots, dots_after = match.groups()
        before = text[:match.start()]
        if before.count("[") - before.count("]") < 0:
            continue
        name = raw.strip("<>").lower().replace(" ", "_").replace("-", "_").rstrip(".")
        if name in PLACEHOLDER_WORDS or name.startswith("option") or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            continue
        seen_dashes = seen_dashes or bool(dashes) or "--" in before.split("[")[-1]
        depth = before.count("[") - before.count("]") + len(opening)
        found.append(Positional(name, optional=depth > 0, repeated=bool(dots or dots_after),
                                after_dashes=bool(dashes)))
    return found


def draft(program: str, subs: Sequence[str], help_text: str, *, chosen: Sequence[str] = (),
          max_options: int = 8, help_flag: str = "--help") -> Draft:
    """A tool for ``program subs…`` from its help; ``chosen``: the options to emit (else the rule above)."""
    name = tool_name("_".join([program, *subs]).replace("-", "_"))
    imported = Imported(name, f"{' '.join([program, *subs])} (its help)")
    options = parse_options(help_text)
    by_spelling = {o.spelling: o for o in options}
    result = Draft(imported)
    if chosen:
        for spelling in chosen:
            option = by_spelling.get(spelling) or next((o for o in options if spelling in (o.spelling,)), None)
            if option is None:
                result.unlisted.append(spelling)
                option = HelpOption(spelling, None, "")
            result.options.append(option)
        imported.notes.append(f"options chosen by hand: {', '.join(chosen)}")
    else:
        result.options = [o for o in options if _useful(o)][:max_options]
        left = [o.spelling for o in options if o not in result.options]
        imported.notes.append(f"{len(result.options)} of {len(options)} options kept (help order, none that "
                              f"writes, runs or waits); left out: {', '.join(left[:30])}"
                              + (" …" if len(left) > 30 else ""))
    result.positionals = parse_usage(help_text, program, subs)
    _build(result, program, subs, help_flag)
    return result


def _useful(option: HelpOption) -> bool:
    words = f"{option.spelling} {option.metavar or ''}".lower()
    if any(word in words for word in SKIPPED_WORDS) or SKIPPED_DESCRIPTIONS.search(option.description):
        return False
    return not (option.metavar and FILE_METAVARS.search(option.metavar))


def parameter_name(option: HelpOption) -> str:
    if option.spelling.startswith("--"):
        return option.spelling[2:].replace("-", "_")
    words = re.findall(r"[a-z]+", option.description.lower())[:3]
    return "_".join(words) or f"opt_{option.spelling[1:]}"


def _build(result: Draft, program: str, subs: Sequence[str], help_flag: str) -> None:
    imported = result.imported
    properties: dict[str, Any] = {}
    required: list[str] = []
    command: list[Any] = [program, *subs]
    for option in result.options:
        name = parameter_name(option)
        if name in properties:
            continue
        description = option.description[:200]
        if option.metavar is None:
            properties[name] = {"type": "boolean", "default": False, "description": description}
            command.append([option.spelling, f"{{{name}}}"])
            continue
        schema: dict[str, Any] = {"type": "string", "description": description}
        if option.choices:
            schema["enum"] = list(option.choices)
        elif INTEGER_METAVARS.match(option.metavar):
            schema = {"type": "integer", "minimum": 0, "description": description}
        else:
            imported.notes.append(f"parameter '{name}' ({option.spelling} {option.metavar}) is a string: add a "
                                  "pattern or enum if its values are known")
        properties[name] = schema
        command.append([option.spelling, f"{{{name}}}"])
    for positional in result.positionals:
        name = positional.name if positional.name not in properties else f"{positional.name}_arg"
        schema = {"type": "array", "items": {"type": "string"}} if positional.repeated else {"type": "string"}
        if positional.repeated and not positional.optional:
            schema["minItems"] = 1
        elif positional.repeated:
            schema["default"] = []  # none given: nothing in its place
        properties[name] = schema
        if not positional.optional:
            required.append(name)
        if positional.after_dashes:
            command.append("--")
        element = f"{{{name}}}"
        command.append(element if not positional.optional or positional.repeated else [element])
        imported.notes.append(f"positional '{name}' from the usage line ({'optional' if positional.optional else 'required'}"
                              f"{', repeated' if positional.repeated else ''})")
    imported.tool["command"] = command
    risk_and_sandbox(imported, [(program, tuple(subs))])
    summary = f"Run `{' '.join([program, *subs])}`"
    imported.tool = {"name": imported.name, "description": f"{summary} (drafted from its help).",
                     **imported.tool}
    if properties:
        schema_all: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema_all["required"] = required
        runner = imported.tool.pop("command")
        imported.tool["parameters"] = schema_all
        imported.tool["command"] = runner
    imported.tool["docs"] = [program, *subs, help_flag]


def unlisted_options(draft_tool: dict[str, Any], help_text: str) -> list[str]:
    """Options the draft's command passes that the help text does not list (as a whole word)."""
    missing = []
    for element in _flatten(draft_tool.get("command") or []):
        if isinstance(element, str) and element.startswith("-") and element != "--":
            option = element.split("=", 1)[0]
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text):
                missing.append(option)
    return missing


def _flatten(items: list) -> list:
    return [leaf for item in items for leaf in (_flatten(item) if isinstance(item, list) else [item])]


def probe_arguments(draft_tool: dict[str, Any], examples: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The arguments of a probe call: the examples given, and for a required parameter without one a known
    harmless value (a jq filter: ``.``). Returns them and the required parameters left without a value."""
    schema = draft_tool.get("parameters") or {}
    arguments = dict(examples)
    lacking = []
    for name in schema.get("required", []):
        if name in arguments:
            continue
        if "filter" in name:
            arguments[name] = "."
        else:
            lacking.append(name)
    return arguments, lacking
