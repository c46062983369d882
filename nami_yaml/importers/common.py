"""What every importer shares: the tool being drafted, its review notes, the guesses (risk from the program
and its verb, sandbox needs from the program table the sandbox itself uses), and writing the files: each
tool loaded by nami's own loader before anything is written, files written atomically, none replaced
without ``force``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nami_yaml.errors import NamiError
from nami_yaml.importers.template import Converted, Optional, Piece, Text, Var, convert
from nami_yaml.runners.sandbox.known_programs import PROC, needs_of, script_programs


class ImportProblem(NamiError):
    """A source file that cannot be imported at all (unreadable, not the format named), or an output file
    that exists (without --force)."""


READ_VERBS = ("get", "list", "ls", "describe", "logs", "log", "show", "status", "top", "events", "history",
              "diff", "inspect", "explain", "view", "version", "info", "search", "find", "lookup", "query",
              "cat", "ps", "images", "tree", "du", "df", "head", "tail", "grep", "wc", "blame", "lineage",
              "api-resources", "api-versions", "cluster-info", "whoami", "lookup-events", "config", "dump",
              "check", "verify", "count", "stat", "who", "read", "fetch-logs", "hubble", "observe")
WRITE_VERBS = ("apply", "delete", "scale", "create", "patch", "edit", "set", "label", "annotate", "drain",
               "cordon", "uncordon", "rm", "rmi", "restart", "stop", "start", "kill", "install", "upgrade",
               "uninstall", "rollback", "push", "commit", "put", "update", "remove", "replace", "rollout",
               "taint", "autoscale", "expose", "terminate", "reboot", "modify", "attach", "detach", "sync")
EXEC_VERBS = ("exec", "run", "eval", "debug", "port-forward", "proxy", "cp", "ssh", "sh", "bash")
# Programs that only read what they are given (filters and formatters): their risk is read whatever follows.
READ_PROGRAMS = frozenset({"grep", "egrep", "head", "tail", "jq", "yq", "sort", "uniq", "wc", "cut", "awk",
                           "sed", "tr", "column", "echo", "printf", "date", "cat", "ls", "df", "du", "ps", "uptime",
                           "free", "hostname", "whoami", "id", "uname", "env", "find", "stat", "true", "test",
                           "dig", "nslookup", "ping", "host", "curl", "wget", "journalctl", "base64", "xargs", "nl",
                           "fold", "paste", "join", "comm", "diff", "file", "tree", "less", "more", "lynx", "rg",
                           "fd", "strings", "od", "hexdump", "md5sum", "sha256sum", "realpath", "readlink", "pwd", "printenv"})
RISK_ORDER = {"read": 0, "write": 1, "exec": 2}
# Shell builtins and keywords of a script: they run no program, so they say nothing of its risk.
SHELL_BUILTINS = frozenset({"set", "export", "local", "declare", "readarray", "mapfile", "read", "cd", "shift",
                            "return", "exit", "unset", "true", "false", "[", "[[", "test", ":", "trap", "wait",
                            "mktemp", "continue", "break", "source", ".", "let", "shopt", "command",
                            "type", "hash", "basename", "dirname", "sleep", "seq", "realpath", "readlink"})
# Programs that change files whatever their operands: their risk is write.
WRITE_PROGRAMS = frozenset({"mkdir", "touch", "cp", "mv", "rm", "rmdir", "tee", "ln", "chmod", "chown", "truncate",
                            "dd", "install", "patch"})


def guess_risk(program: str, args: Sequence[str]) -> tuple[str, str]:
    """``read``/``write``/``exec`` and why, from the program's name and its first operand (its verb)."""
    name = os.path.basename(program)
    verb = next((a for a in args if a and not a.startswith("-") and "{" not in a), "")
    if name in WRITE_PROGRAMS:
        return "write", f"{name} changes files"
    edits = name == "sed" and any(a.startswith(("-i", "--in-place")) for a in args if a)
    runs = (name == "find" and any(a in ("-exec", "-execdir", "-delete", "-ok") for a in args if a)) or name == "xargs"
    if name in READ_PROGRAMS and not edits and not runs and name != "awk":
        return "read", f"{name} only reads"
    if edits or runs:
        return ("write" if edits or "-delete" in args else "exec"), f"{name} {'edits files' if edits else 'runs or deletes'}"
    for risk, verbs in (("exec", EXEC_VERBS), ("write", WRITE_VERBS), ("read", READ_VERBS)):
        if any(verb == v or verb.startswith(f"{v}-") for v in verbs):
            return risk, f"{name} {verb}: a {risk} verb"
    shown = f"{name} {verb}".strip()
    return "exec", f"{shown}: unknown verb, so exec (asks before every call); lower it if it only reads"


@dataclass
class Imported:
    """One tool drafted from a source: its nami definition and what the reviewer should look at."""

    name: str
    source: str  # where it came from: file and tool
    tool: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # why it was not brought (then ``tool`` is empty)


def tool_from_template(imported: Imported, pieces: Sequence[Piece], parameters: dict[str, Any],
                       required: Sequence[str], *, script_only: str = "") -> None:
    """Fill ``imported.tool`` with the runner for a shell template, its risk and sandbox guesses, and notes."""
    # Left out by a call and without a default: such a value alone is an optional group
    optional = {name for name, spec in parameters.items() if name not in required and "default" not in spec}
    result: Converted = convert(pieces, optional, script_only=script_only)
    if result.problem:
        imported.skipped = result.problem
        return
    if result.command is not None or result.pipeline is not None:
        _timeout_prefix(imported, result)
        stages = result.pipeline or [result.command]
        if result.pipeline is not None:
            imported.tool["pipeline"] = result.pipeline
            imported.notes.append("pipeline (no shell): " + " | ".join(_shown_argv(stage) for stage in stages))
        else:
            imported.tool["command"] = result.command
            imported.notes.append("argv: " + _shown_argv(result.command))
        _output_filters(imported, result, parameters)
        for redirect in dict.fromkeys(result.dropped):
            imported.notes.append(f"`{redirect}` left out: nami returns the command's stderr after its output "
                                  "(not through a pipe's later stages)")
        if any(stage[0] == "grep" for stage in stages[1:]):
            imported.notes.append("a grep stage exits 1 when nothing matches, and the pipeline then fails like "
                                  "`set -o pipefail` (sh reported only the last stage's status)")
        for name in [n for n in result.split_values if SEVERAL_WORDS.search(n)]:
            imported.notes.append(f"parameter '{name}' stood unquoted, so the shell split it into several arguments; "
                                  "nami passes it as one: make it an array (one item per argument) or typed "
                                  "parameters")
        programs = [(str(stage[0]), tuple(str(a) for a in stage[1:] if isinstance(a, str))) for stage in stages]
    else:
        assert result.script is not None
        renamed = _script_names(imported, parameters, required)
        script = result.script
        for old, new in renamed.items():
            script = script.replace(f"${{{old}}}", f"${{{new}}}").replace(f"${{{old}:+", f"${{{new}:+")
        imported.tool["script"] = script if script.endswith("\n") else script + "\n"
        imported.notes.append(f"script: {result.why_script}; every value is read from its environment variable")
        programs = [(p or "", tuple(a or "" for a in args)) for p, args in script_programs(script)]
    _language_notes(imported, pieces)
    risk_and_sandbox(imported, programs)


# Names of values that stand for several arguments at once (curl <<arguments>>): the shell split them.
SEVERAL_WORDS = re.compile(r"arg|flag|option|opts|extra|param|cmd|command", re.IGNORECASE)


def _timeout_prefix(imported: Imported, result: Converted) -> None:
    """``timeout 30 kubectl logs ...``: nami's own ``timeout:`` (it stops the whole process group), so that
    the argv starts with the program that does the work (its risk and sandbox needs are guessed from it)."""
    argv = result.command if result.command is not None else (result.pipeline or [[]])[0]
    seconds = re.fullmatch(r"(\d+)s?", str(argv[1])) if len(argv) > 2 and argv[0] == "timeout" else None
    if not seconds or not isinstance(argv[2], str) or argv[2].startswith("-") or "{" in argv[2]:
        return
    del argv[:2]
    imported.tool["timeout"] = max(1, int(seconds.group(1)))
    imported.notes.append(f"`timeout {seconds.group(0)}` became timeout: {imported.tool['timeout']} (nami stops the "
                          "whole process group)")


def _output_filters(imported: Imported, result: Converted, parameters: dict[str, Any]) -> None:
    """The stages nami's own output filters replaced (``| grep X``, ``| head -n N``), said in the report; a
    parameter counting lines becomes an integer (the filter needs a number)."""
    if not result.output:
        return
    imported.tool["output"] = dict(result.output)
    for (key, value), stage in zip(result.output.items(), result.filtered, strict=True):
        imported.notes.append(f"output filter {key}: {value} replaces the stage `| {stage}` (in-process; the whole "
                              "output is still saved)")
        name = value[1:-1] if isinstance(value, str) and value.startswith("{") else None
        if key == "grep" and name:
            imported.notes.append(f"'{name}' is now a Python regular expression (re), not grep's basic one: "
                                  "mostly the same; a literal text with + ? | ( ) { } reads differently")
        if key in ("head", "tail") and name in parameters and parameters[name].get("type") in ("string", "number"):
            parameters[name]["type"] = "integer"
            if str(parameters[name].get("default", "")).isdigit():
                parameters[name]["default"] = int(parameters[name]["default"])
            imported.notes.append(f"parameter '{name}' typed integer: it counts lines for output.{key}")


def _script_names(imported: Imported, parameters: dict[str, Any], required: Sequence[str]) -> dict[str, str]:
    """A script gets its values as variables, which only names with a lower-case letter become: rename."""
    renamed = {name: name.lower() for name in parameters if not any(c.islower() for c in name)}
    for old, new in renamed.items():
        parameters[new] = parameters.pop(old)
        imported.notes.append(f"parameter '{old}' renamed '{new}' (a script reads it as ${new}; nami passes only "
                              "names with a lower-case letter as variables)")
    if renamed and isinstance(required, list):
        required[:] = [renamed.get(name, name) for name in required]
    return renamed


def _shown_argv(command: list) -> str:
    return " ".join(f"[{_shown_argv(part)}]" if isinstance(part, list) else str(part) for part in command)


LANGUAGES = (
    (re.compile(r"^(jq|yq)$"), "a jq program"),
    (re.compile(r"--query$|^--jmespath"), "a JMESPath query"),
    (re.compile(r"^(psql|mysql|sqlite3|clickhouse-client|bq)$"), "SQL"),
)
SQL_WORDS = re.compile(r"\b(select|insert|update|delete)\b.*\b(from|into|set|where)\b", re.IGNORECASE | re.DOTALL)


def _language_notes(imported: Imported, pieces: Sequence[Piece]) -> None:
    """Values written inside a quoted string of another language: escaped for the shell, not for it."""
    flat = [p for piece in pieces for p in (piece.body if isinstance(piece, Optional) else [piece])]
    text_before = ""
    for index, piece in enumerate(flat):
        if isinstance(piece, Text):
            text_before += piece.text
            continue
        words = text_before.split()
        glued = bool(text_before) and not text_before[-1].isspace()
        after = flat[index + 1].text[:1] if index + 1 < len(flat) and isinstance(flat[index + 1], Text) else ""
        inside = glued or (after and not after.isspace())
        language = ""
        if words and SQL_WORDS.search(text_before.rsplit("'", 1)[-1] + text_before.rsplit('"', 1)[-1]):
            language = "SQL"
        for pattern, what in LANGUAGES:
            if any(pattern.search(word) for word in words[-3:]) or (words[:1] and pattern.search(words[0])):
                language = language or what
        if inside and language:
            imported.notes.append(f"value of '{piece.name}' lands inside {language}: it is safe from the shell, "
                                  f"not from {language}; constrain it (enum or pattern)")
        text_before += "X"


# A redirection into a file (not /dev/null, /dev/stdout, /dev/stderr, another descriptor or llm-functions'
# $LLM_OUTPUT, which nami makes standard output): the script writes.
FILE_REDIRECT = re.compile(r"(?<![0-9&<>])>>?(?!>)\s*(?!\s|/dev/(?:null|stdout|stderr)\b|&|\"?\$\{?LLM_OUTPUT\b)")


def risk_and_sandbox(imported: Imported, programs: Sequence[tuple[str, tuple[str, ...]]]) -> None:
    risk, why = "read", "no program"
    network, processes, reads = False, False, []
    for program, args in programs:
        if not program or "{" in program or program in SHELL_BUILTINS:
            continue
        one, reason = guess_risk(program, args)
        if RISK_ORDER[one] > RISK_ORDER[risk] or why == "no program":
            risk, why = one, reason
        needs = needs_of(program, args)
        if needs is not None:
            network |= needs.network
            processes |= needs.processes
            reads += [group[0] for group in needs.reads if group[0] not in reads]
    if risk == "read" and FILE_REDIRECT.search(imported.tool.get("script", "")):
        risk, why = "write", "the script redirects output into a file (>)"
    imported.tool["risk"] = risk
    imported.notes.append(f"risk {risk}: {why}")
    sandbox: dict[str, Any] = {}
    if network:
        sandbox["network"] = True
    if processes or reads:
        sandbox["reads"] = ([PROC] if processes else []) + reads
    if sandbox:
        imported.tool["sandbox"] = sandbox
        imported.notes.append(f"sandbox guessed from the programs: {sandbox}")


def string_parameter(description: str = "") -> dict[str, Any]:
    return {"type": "string", **({"description": description} if description else {})}


def ordered_tool(imported: Imported, description: str, parameters: dict[str, Any], required: Sequence[str]) -> None:
    """Put the keys in the order people read them: name, description, risk, sandbox, parameters, runner."""
    runner = {k: imported.tool.pop(k) for k in ("command", "pipeline", "script", "output") if k in imported.tool}
    rest = dict(imported.tool)
    schema: dict[str, Any] = {"type": "object", "properties": parameters}
    if required:
        schema["required"] = list(required)
    imported.tool.clear()
    imported.tool.update({"name": imported.name, "description": _one_paragraph(description) or imported.name})
    imported.tool.update({k: rest.pop(k) for k in ("risk", "timeout", "sandbox") if k in rest})
    if parameters:
        imported.tool["parameters"] = schema
    imported.tool.update(rest)
    imported.tool.update(runner)


def _one_paragraph(text: str) -> str:
    return " ".join(str(text or "").split())


def tool_name(raw: str) -> str:
    """A nami tool name (``^[a-zA-Z0-9_-]{1,64}$``) from another format's name."""
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", str(raw)).strip("_") or "tool"
    return name[:64]


def template_pieces(parts: Sequence[tuple[str, str]]) -> list[Piece]:
    """``[("text", ...), ("var", name)]`` -> pieces (for the formats whose placeholders are plain names)."""
    return [Text(value) if kind == "text" else Var(value) for kind, value in parts]


# ---------------------------------------------------------------------------------------------------------
# The report and the files


@dataclass
class Outcome:
    """One source file's import: the tools, the file written, the problems nami's loader found."""

    source: str
    out_file: Path
    tools: list[Imported]
    general: list[str] = field(default_factory=list)  # notes about the whole file
    written: bool = False
    shared: bool = True  # several tools written with defaults: and $defs: (False when that would not load)


# Keys a file's tools often share, hoisted into ``defaults:``; what a tool without the key then writes so
# that the default does not reach it (a sandbox or env it did not have): only these can say "none".
SHARED_KEYS = ("risk", "target", "timeout", "sandbox", "env")
WITHOUT = {"sandbox": {}, "env": {}}


def shared_form(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Several tools as nami writes them by hand: the keys most of them share once in ``defaults:`` (a
    tool's own key wins), parameter schemas two or more tools repeat once in ``$defs:``."""
    defaults: dict[str, Any] = {}
    for key in SHARED_KEYS:
        values = [json.dumps(tool[key], sort_keys=True) if key in tool else None for tool in tools]
        counts = Counter(value for value in values if value is not None)
        if not counts:
            continue
        value, count = counts.most_common(1)[0]
        absent = values.count(None)
        if count >= 2 and count > absent and (not absent or key in WITHOUT):
            defaults[key] = json.loads(value)
    defs = _shared_schemas(tools)
    written = []
    for tool in tools:
        tool = dict(tool)
        for key, value in defaults.items():
            if key not in tool:  # right after the description, where a reader looks for it
                head = {k: tool.pop(k) for k in ("name", "description") if k in tool}
                tool = {**head, key: WITHOUT[key], **tool}
            elif tool[key] == value:
                del tool[key]
        properties = (tool.get("parameters") or {}).get("properties")
        if properties:
            refs = {name: {"$ref": f"#/$defs/{defs[name, _key(schema)]}"} for name, schema in properties.items()
                    if (name, _key(schema)) in defs}
            if refs:
                tool["parameters"] = {**tool["parameters"], "properties": {**properties, **refs}}
        written.append(tool)
    body: dict[str, Any] = {}
    if defaults:
        body["defaults"] = defaults
    if defs:
        body["$defs"] = {def_name: schema for def_name, schema in _first_schemas(tools, defs).items()}
    body["tools"] = written
    return body


def shared_notes(outcome: Outcome) -> list[str]:
    """What ``shared_form`` declared once, for the report."""
    kept = [t.tool for t in outcome.tools if not t.skipped]
    if len(kept) < 2 or not outcome.shared:
        return []
    body = shared_form(kept)
    notes = []
    if body.get("defaults"):
        listed = ", ".join(f"{key}: {json.dumps(value)}" for key, value in body["defaults"].items())
        notes.append(f"defaults: declared once for the {len(kept)} tools ({listed}); a tool's own key wins")
        for tool in body["tools"]:
            for key in WITHOUT:
                if key in body["defaults"] and tool.get(key) == WITHOUT[key]:
                    notes.append(f"{tool['name']}: {key}: {{}} (it needs none; the defaults' {key} is not for it)")
    if body.get("$defs"):
        notes.append(f"$defs: {', '.join(body['$defs'])}: parameter schemas several tools share, written once "
                     "(each tool names one with $ref)")
    return notes


def _first_schemas(tools: list[dict[str, Any]], defs: dict[tuple[str, str], str]) -> dict[str, Any]:
    """Each ``$defs`` entry as its first tool wrote it (keys in their order)."""
    found: dict[str, Any] = {}
    for tool in tools:
        for name, schema in ((tool.get("parameters") or {}).get("properties") or {}).items():
            def_name = defs.get((name, _key(schema))) if isinstance(schema, dict) else None
            if def_name and def_name not in found:
                found[def_name] = schema
    return dict(sorted(found.items(), key=lambda item: list(defs.values()).index(item[0])))


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True)


def _shared_schemas(tools: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(parameter name, schema) written identically by two or more tools, and more than a bare type ->
    the ``$defs`` name it gets (the parameter's name; name_2 ... for another schema of the same name)."""
    uses: Counter[tuple[str, str]] = Counter()
    for tool in tools:
        for name, schema in ((tool.get("parameters") or {}).get("properties") or {}).items():
            if isinstance(schema, dict) and len(schema) > 1:
                uses[name, _key(schema)] += 1
    names: dict[tuple[str, str], str] = {}
    for (name, schema), count in uses.items():
        if count >= 2:
            taken = set(names.values())
            def_name, number = name, 2
            while def_name in taken:
                def_name, number = f"{name}_{number}", number + 1
            names[name, schema] = def_name
    return names


def file_text(outcome: Outcome, command: str) -> str:
    kept = [t.tool for t in outcome.tools if not t.skipped]
    header = (f"# Imported by `nami import {command}` from {outcome.source}.\n"
              "# Review it before use: the import report lists what became argv, what needed a script, and the\n"
              "# guesses (risk, sandbox) to check.\n")
    kept = [{**tool, **{key: _Flow(tool[key]) for key in ("command", "pipeline") if key in tool}} for tool in kept]
    body: Any = kept[0] if len(kept) == 1 else {"tools": kept}
    if len(kept) > 1 and outcome.shared:
        body = shared_form(kept)
    return header + yaml.dump(body, Dumper=_BlockScripts, sort_keys=False, allow_unicode=True, width=110,
                              default_flow_style=None)


class _BlockScripts(yaml.SafeDumper):
    """Scripts and other text of several lines as YAML literal blocks (``script: |``), as people write them."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    block = "\n" in value and not any(line != line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


class _Flow(list):
    """A command written on one line, as an argv reads: [kubectl, get, pods, "{name}"]."""


_BlockScripts.add_representer(str, _text)
_BlockScripts.add_representer(
    _Flow, lambda dumper, value: dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True))


def verify_loads(outcomes: Sequence[Outcome], command: str) -> None:
    """Load every drafted file with nami's loader; a tool it refuses is left out and its problems noted."""
    from nami_yaml.registry.loader import check_tools

    with tempfile.TemporaryDirectory(prefix="nami-import-") as folder:
        for outcome in outcomes:
            for imported in outcome.tools:
                if imported.skipped:
                    continue
                path = Path(folder) / f"{imported.name}.yaml"
                single = Outcome(outcome.source, path, [imported])
                path.write_text(file_text(single, command), encoding="utf-8")
                _, problems = check_tools([path])
                errors = [p for p in problems if p.is_error]
                for problem in problems:
                    where = problem.path if problem.path != "$" else "the tool"
                    imported.notes.append(f"nami check: {where}: {problem.severity}: {problem.message}")
                if errors:
                    imported.skipped = "nami's loader refused it: " + "; ".join(p.message for p in errors)
            _verify_shared(outcome, command, Path(folder))


def _verify_shared(outcome: Outcome, command: str, folder: Path) -> None:
    """The file as written (defaults:, $defs:) loads as its tools did one by one, or is written plainly."""
    from nami_yaml.registry.loader import check_tools

    if sum(1 for t in outcome.tools if not t.skipped) < 2:
        return
    path = folder / "whole-file.yaml"
    path.write_text(file_text(outcome, command), encoding="utf-8")
    _, problems = check_tools([path])
    errors = [p for p in problems if p.is_error]
    if errors:
        outcome.shared = False
        outcome.general.append("written without defaults:/$defs: (nami's loader refused that form: "
                               + "; ".join(p.message for p in errors) + ")")


def write_outcomes(outcomes: Sequence[Outcome], command: str, *, force: bool) -> None:
    """Write each file atomically; refuse (before writing any) when one exists and ``force`` is not given."""
    present = [o.out_file for o in outcomes if o.out_file.exists() and any(not t.skipped for t in o.tools)]
    if present and not force:
        raise ImportProblem(f"{', '.join(map(str, present))} already exist{'s' if len(present) == 1 else ''}; "
                            "nothing was written (--force replaces)")
    for outcome in outcomes:
        if any(not t.skipped for t in outcome.tools):
            write_atomically(outcome.out_file, file_text(outcome, command))
            outcome.written = True


def write_atomically(target: Path, text: str) -> None:
    """A temporary file in the same folder, synced, then renamed over ``target``: never half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise ImportProblem(f"cannot write {target}: {exc.strerror or exc}") from None


def report_text(outcomes: Sequence[Outcome], command: str) -> str:
    """The review report, Markdown: per file, per tool, what became what and what to check."""
    lines = [f"# nami import {command}: review report", ""]
    total = sum(len(o.tools) for o in outcomes)
    brought = sum(1 for o in outcomes for t in o.tools if not t.skipped)
    lines += [f"{brought} of {total} tools imported into {len({o.out_file for o in outcomes})} file(s).", ""]
    for outcome in outcomes:
        state = "written" if outcome.written else "not written"
        lines += [f"## {outcome.source} -> {outcome.out_file} ({state})", ""]
        lines += [f"- {note}" for note in outcome.general + shared_notes(outcome)]
        for imported in outcome.tools:
            if imported.skipped:
                lines.append(f"- **{imported.name}: not imported**: {imported.skipped}")
                lines += [f"  - {note}" for note in imported.notes if note.startswith("not brought")]
                continue
            lines.append(f"- **{imported.name}**")
            lines += [f"  - {note}" for note in imported.notes]
        lines.append("")
    return "\n".join(lines)


def read_yaml(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImportProblem(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ImportProblem(f"{path} is not YAML ({what} files are): {exc}") from None


def untyped(imported: Imported, names: Sequence[str]) -> None:
    for name in names:
        imported.notes.append(f"parameter '{name}' is untyped in the source: imported as a string; add a type, "
                              "enum or pattern")


__all__ = ["Imported", "ImportProblem", "Optional", "Outcome", "Text", "Var"]
