"""llm-functions bash tools (a folder of ``tools/*.sh``, each described by argc comments: ``# @describe``,
``# @option --name!``, ``# @flag --name``, ``# @arg name``, ``# @env NAME=default``, read with
``$argc_name`` in a ``main`` function). Each becomes a ``script:`` that sets the ``argc_`` variables from
nami's own (never from text spliced into the script) and calls ``main``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nami_yaml.importers.common import (
    Imported,
    ImportProblem,
    Outcome,
    ordered_tool,
    risk_and_sandbox,
    tool_name,
)
from nami_yaml.runners.sandbox.known_programs import script_programs

# One argc comment: tag, then the option or argument spec, then its description.
TAG = re.compile(r"^#\s*@(describe|option|flag|arg|env|meta)\b\s*(.*)$")
SPEC = re.compile(r"^(?:-\w\s+)?(--)?([A-Za-z][\w-]*)([!*+]?)(?:\[([^\]]*)\])?(?:=(\S+))?(?:\s+<[^>]*>)?\s*(.*)$")
ARGC_EVAL = re.compile(r"^\s*eval\s+\"\$\(argc\s+--argc-eval")


def import_folder(path: Path, out_dir: Path) -> list[Outcome]:
    if path.is_file():
        files = [path]
    elif path.is_dir():
        folder = path / "tools" if (path / "tools").is_dir() else path
        files = sorted(folder.glob("*.sh"))
    else:
        raise ImportProblem(f"{path}: no such file or folder")
    if not files:
        raise ImportProblem(f"{path}: no *.sh tools (llm-functions keeps them in tools/)")
    return [Outcome(str(file), out_dir / f"{file.stem}.yaml", [import_script(file)]) for file in files]


def import_script(file: Path) -> Imported:
    imported = Imported(tool_name(file.stem), str(file))
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        imported.skipped = f"cannot read: {exc}"
        return imported
    description, parameters, required, prelude = "", {}, [], []
    kept: list[str] = []
    for line in text.splitlines():
        found = TAG.match(line.strip())
        if ARGC_EVAL.match(line):
            continue  # argc parsed "$@": nami has already set the variables
        if not found:
            kept.append(line)
            continue
        tag, rest = found.groups()
        if tag == "describe":
            description = f"{description} {rest}".strip()
        elif tag in ("option", "flag", "arg"):
            why = _parameter(tag, rest, parameters, required, prelude, imported)
            if why:
                imported.skipped = why
                return imported
        elif tag == "env":
            _env(rest, prelude, imported)
        else:
            imported.notes.append(f"@meta {rest}: not brought (check the programs it names are installed)")
    if kept and kept[0].startswith("#!"):
        kept = kept[1:]
    body = "\n".join(kept).strip("\n")
    if "LLM_OUTPUT" in body and "LLM_OUTPUT=/dev/stdout" not in prelude:
        prelude.append("LLM_OUTPUT=/dev/stdout")  # llm-functions always sets it; here the output is stdout
    script = "\n".join(prelude) + ("\n" if prelude else "") + body + "\n"
    if re.search(r"^\s*main\s*\(\)", body, re.MULTILINE):
        script += 'main "$@"\n'
    imported.tool["script"] = script
    imported.notes.append("script: llm-functions tools are bash; the argc_ variables are set from nami's "
                          "environment variables (quoted, never spliced)")
    programs = [(p or "", tuple(a or "" for a in args)) for p, args in script_programs(body)]
    risk_and_sandbox(imported, programs)
    if "eval " in body:
        imported.notes.append("the script runs eval: a value reaching it runs as code; rewrite that part or keep "
                              "risk exec")
        imported.tool["risk"] = "exec"
    ordered_tool(imported, description, parameters, required)
    return imported


def _parameter(tag: str, rest: str, parameters: dict[str, Any], required: list[str], prelude: list[str],
               imported: Imported) -> str:
    found = SPEC.match(rest)
    if not found:
        return f"cannot read '@{tag} {rest}'"
    _, raw_name, mark, choices, default, description = found.groups()
    name = raw_name.replace("-", "_")
    if not any(c.islower() for c in name):
        name = name.lower()
    variable = f"argc_{raw_name.replace('-', '_')}"
    schema: dict[str, Any] = {"type": "string"}
    if description:
        schema["description"] = description.strip()
    if tag == "flag":
        schema = {"type": "boolean", "default": False, **({"description": description.strip()} if description else {})}
        prelude.append(f'if [ "${{{name}:-false}}" = true ]; then {variable}=1; else unset {variable}; fi')
    elif mark in ("*", "+"):
        schema = {"type": "array", "items": {"type": "string"}, **({"minItems": 1} if mark == "+" else {})}
        prelude.append(f"{variable}=()")
        prelude.append(f'[ -z "${{{name}:-}}" ] || readarray -t {variable} < <(printf \'%s\' "${name}" | jq -r \'.[]\')')
        imported.notes.append(f"array parameter '{name}' is read with jq (needs jq where the tool runs)")
    else:
        prelude.append(f'{variable}="${{{name}-}}"')
    if choices and tag != "flag":
        values = [c for c in choices.split("|") if c and not c.startswith("`")]
        if values:
            schema["enum"] = values
    if default is not None and tag != "flag":
        schema["default"] = default
    if mark in ("!", "+"):
        required.append(name)
    elif tag != "flag" and "enum" not in schema and default is None:
        imported.notes.append(f"parameter '{name}' is untyped in the source: a string; add a pattern or enum")
    parameters[name] = schema
    return ""


def _env(rest: str, prelude: list[str], imported: Imported) -> None:
    name, _, default = rest.split()[0].partition("=") if rest.split() else ("", "", "")
    name = name.rstrip("!")
    if name == "LLM_OUTPUT":
        prelude.append("LLM_OUTPUT=/dev/stdout")  # what the model reads is the tool's standard output
        return
    if name:
        imported.notes.append(f"reads the host's ${name}: give it with env: ({name}: \"${{{name}}}\") and, if its "
                              "name looks secret, env_passthrough" + (f" (its default: {default})" if default else ""))
