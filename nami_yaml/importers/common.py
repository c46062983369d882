"""What every importer shares: the tool being drafted, its review notes, the guesses (risk from the program
and its verb, sandbox needs from the program table the sandbox itself uses), and writing the files: each
tool loaded by nami's own loader before anything is written, files written atomically, none replaced
without ``force``."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
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
    if result.command is not None:
        imported.tool["command"] = result.command
        imported.notes.append("argv: " + _shown_argv(result.command))
        for name in [n for n in result.split_values if SEVERAL_WORDS.search(n)]:
            imported.notes.append(f"parameter '{name}' stood unquoted, so the shell split it into several arguments; "
                                  "nami passes it as one: make it an array (one item per argument) or typed "
                                  "parameters")
        programs = [(str(result.command[0]), tuple(str(a) for a in result.command[1:] if isinstance(a, str)))]
    else:
        assert result.script is not None
        renamed = _script_names(imported, parameters, required)
        script = result.script
        for old, new in renamed.items():
            script = script.replace(f"${{{old}}}", f"${{{new}}}").replace(f"${{{old}:+", f"${{{new}:+")
        imported.tool["script"] = script if script.endswith("\n") else script + "\n"
        imported.notes.append(f"script: {result.why_script}; every value is read from its environment variable")
        shorter = _shorter_form(result.why_script, script)
        if shorter:
            imported.notes.append(f"shorter later: {shorter}")
        programs = [(p or "", tuple(a or "" for a in args)) for p, args in script_programs(script)]
    _language_notes(imported, pieces)
    risk_and_sandbox(imported, programs)


# Names of values that stand for several arguments at once (curl <<arguments>>): the shell split them.
SEVERAL_WORDS = re.compile(r"arg|flag|option|opts|extra|param|cmd|command", re.IGNORECASE)


def _shorter_form(why: str, script: str) -> str:
    """Where a form nami's tool format is growing (issue 45: pipelines of argv lists, parameterised output
    filters, a boolean negated in a group) would keep this tool argv."""
    if "'|'" in why and script.count("\n") <= 1:
        tail = script.rsplit("|", 1)[-1].split()
        if tail and tail[0] in ("grep", "head", "tail"):
            return f"an output filter ({tail[0]}: ...) would replace the pipe into {tail[0]}, keeping a command"
        return "a pipeline: of argv lists would run this without a shell"
    if "{% else %}" in why:
        return "a boolean negated in a group would write the else branch as argv"
    return ""


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
    runner = {k: imported.tool.pop(k) for k in ("command", "script") if k in imported.tool}
    rest = dict(imported.tool)
    schema: dict[str, Any] = {"type": "object", "properties": parameters}
    if required:
        schema["required"] = list(required)
    imported.tool.clear()
    imported.tool.update({"name": imported.name, "description": _one_paragraph(description) or imported.name})
    imported.tool.update({k: rest.pop(k) for k in ("risk", "sandbox") if k in rest})
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


def file_text(outcome: Outcome, command: str) -> str:
    kept = [t.tool for t in outcome.tools if not t.skipped]
    header = (f"# Imported by `nami import {command}` from {outcome.source}.\n"
              "# Review it before use: the import report lists what became argv, what needed a script, and the\n"
              "# guesses (risk, sandbox) to check.\n")
    kept = [{**tool, "command": _Flow(tool["command"])} if "command" in tool else tool for tool in kept]
    body: Any = kept[0] if len(kept) == 1 else {"tools": kept}
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
        lines += [f"- {note}" for note in outcome.general]
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
