"""Placeholders that an argv would hand to a program as code: ``[sh, -c, "echo {x}"]`` is shell injection.

A ``command:`` argv is run without a shell, so a value fills one argument and stays data, unless that
argument is itself code: the ``-c`` string of a shell, ``python -c``, ``node -e``, an awk program, or the
remote command of ``ssh`` (which the remote user's shell parses). Those are refused at load, wherever the
program appears in the argv (``timeout 5 sh -c …``, ``kubectl exec pod -- sh -c …``).

A placeholder whose parameter can only hold inert values (integers, booleans, or an enum of plain words)
is allowed: nothing it can take is code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from nami_yaml.runners.template import TemplateError, refs


@dataclass(frozen=True)
class _Runs:
    """How a program takes code: short option letters (clusters like ``-ec`` or ``-lne`` count), long
    options (``--eval code`` or ``--eval=code``), and whether the code follows the option directly
    (``python -c CODE``, also attached: ``-cCODE``) or is the first operand after all options
    (``bash -c -x CODE``)."""

    short: str = ""
    long: tuple[str, ...] = ()
    first_operand: bool = False
    attached: bool = False
    takes_value: str = ""  # short options that consume the next argument (bash -o pipefail)


_SHELL = _Runs(short="c", first_operand=True, takes_value="oO")
PROGRAMS: dict[str, _Runs] = {
    **{name: _SHELL for name in ("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "csh",
                                 "tcsh")},
    "fish": _Runs(short="c", long=("--command",), first_operand=True),
    "python": _Runs(short="c", attached=True, takes_value="WX"),
    "pypy": _Runs(short="c", attached=True, takes_value="WX"),
    "node": _Runs(short="ep", long=("--eval", "--print"), takes_value="r"),
    "nodejs": _Runs(short="ep", long=("--eval", "--print"), takes_value="r"),
    "bun": _Runs(short="e", long=("--eval", "--print")),
    "deno": _Runs(long=("eval",)),
    "perl": _Runs(short="eE", attached=True),
    "ruby": _Runs(short="e", attached=True),
    "php": _Runs(short="r", attached=True),
    "lua": _Runs(short="e", attached=True),
    "luajit": _Runs(short="e", attached=True),
    "rscript": _Runs(short="e"),
    "osascript": _Runs(short="e"),
    "pwsh": _Runs(long=("-c", "-command", "-encodedcommand")),
    "powershell": _Runs(long=("-c", "-command", "-encodedcommand")),
}
AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_VALUE_OPTIONS = ("-F", "-v", "-f", "-e", "--source", "--file", "--assign", "--field-separator")
_SSH_VALUE_LETTERS = "BbcDEeFIiJLlmOopQRSWw"
_NAME = re.compile(r"^([a-z]+?)(?:[0-9][0-9.]*)?(?:\.exe)?$")
_INERT_WORD = re.compile(r"^[A-Za-z0-9_.,:/@%+=-]*$")


def program_name(element: str) -> str:
    """``/usr/bin/python3.12`` -> ``python``; ``bash`` -> ``bash``."""
    base = element.rsplit("/", 1)[-1].lower()
    match = _NAME.match(base)
    return match.group(1) if match else base


def _code_index(args: list[str], runs: _Runs) -> tuple[int, int] | None:
    """Where the code is among ``args`` (the elements after the program): (index, offset into it)."""
    index = 0
    while index < len(args):
        arg = args[index]
        lowered = arg.lower()
        for option in runs.long:
            if lowered == option:
                return (index + 1, 0) if index + 1 < len(args) else None
            if lowered.startswith(option + "="):
                return index, len(option) + 1
        if arg.startswith("--"):
            if arg == "--":
                return None  # what follows is a script and its arguments
            index += 1  # some other long option
            continue
        if not arg.startswith("-") or len(arg) < 2:
            return None  # the first operand (a script file): no code option came before it
        letters = arg[1:]
        for position, letter in enumerate(letters):
            if letter in runs.short:
                if runs.attached and position + 1 < len(letters):
                    return index, position + 2
                if runs.first_operand:
                    return _first_operand(args, index + 1, runs)
                return (index + 1, 0) if index + 1 < len(args) else None
            if letter in runs.takes_value:
                index += 1  # its value is the next argument
                break
        index += 1
    return None


def _first_operand(args: list[str], start: int, runs: _Runs) -> tuple[int, int] | None:
    index = start
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return (index + 1, 0) if index + 1 < len(args) else None
        if not (arg.startswith(("-", "+")) and len(arg) > 1):
            return index, 0
        if arg[-1] in runs.takes_value and not arg.startswith("--"):
            index += 1
        index += 1
    return None


def _awk_program(args: list[str]) -> int | None:
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-f", "--file") or arg.startswith(("--file=", "-f")):
            return None  # the program comes from a file
        if arg in ("-e", "--source"):
            return index + 1 if index + 1 < len(args) else None
        if arg == "--":
            return index + 1 if index + 1 < len(args) else None
        if arg in _AWK_VALUE_OPTIONS:
            index += 2
            continue
        if arg.startswith("-") and len(arg) > 1:
            index += 1
            continue
        return index
    return None


def _ssh_command(args: list[str]) -> int | None:
    """Index of the first element of the remote command, which ssh joins with spaces for a remote shell."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or len(arg) < 2:
            break
        for position, letter in enumerate(arg[1:], start=1):
            if letter in _SSH_VALUE_LETTERS:
                if position == len(arg) - 1:
                    index += 1  # -p 22: the value is the next argument (else it is attached: -p22)
                break
        index += 1
    return index + 1 if index + 1 < len(args) else None


def inert(schema: Any) -> bool:
    """A parameter whose every possible value is harmless inside code: a number, a boolean, or an enum or
    const of plain words (letters, digits and ``_.,:/@%+=-``)."""
    if not isinstance(schema, dict):
        return False
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", []) if "enum" in schema else [schema["const"]]
        return isinstance(values, list) and all(
            isinstance(v, (int, float, bool)) or (isinstance(v, str) and _INERT_WORD.match(v)) for v in values)
    return schema.get("type") in ("integer", "number", "boolean")


def _placeholders(template: str) -> list[str]:
    try:
        return refs(template)
    except TemplateError:
        return []  # reported where the template itself is checked


def code_placeholders(elements: Iterable[tuple[Any, str]], properties: dict[str, Any]) -> list[tuple[Any, str]]:
    """``(where, message)`` for each placeholder that would be run as code. ``elements`` are an argv's
    templates in order, each with where it is (its JSON path), optional groups flattened."""
    listed = list(elements)
    texts = [text for _, text in listed]
    found: list[tuple[Any, str]] = []

    def refuse(index: int, offset: int, program: str, how: str, advice: Callable[[str], str]) -> None:
        for name in _placeholders(texts[index][offset:]):
            if not inert(properties.get(name)):
                found.append((listed[index][0], f"placeholder {{{name}}} is inside the code that {how} runs, so "
                                                f"its value would run as code (injection). {advice(name)}"))

    for position, text in enumerate(texts):
        name = program_name(text)
        rest = texts[position + 1:]
        if name in PROGRAMS:
            at = _code_index(rest, PROGRAMS[name])
            if at is not None:
                refuse(position + 1 + at[0], at[1], name, f"`{name}`",
                       lambda value, program=name: "Use `script:` (arguments arrive as environment variables), or "
                       f"pass the value as an argument of its own, e.g. [{program}, -c, 'echo \"$1\"', {program}, "
                       f"\"{{{value}}}\"] for a shell.")
        elif name in AWKS:
            at_program = _awk_program(rest)
            if at_program is not None:
                refuse(position + 1 + at_program, 0, name, f"the {name} program",
                       lambda value, program=name: f"Pass it as a variable instead: [{program}, -v, "
                       f"\"{value}={{{value}}}\", '{{ print {value} }}'].")
        elif name == "ssh":
            start = _ssh_command(rest)
            if start is not None:
                for index in range(position + 1 + start, len(texts)):
                    refuse(index, 0, name, "the remote shell of `ssh`",
                           lambda value: "ssh joins its command arguments for the remote user's shell; use a fixed "
                           f"remote command, or constrain {{{value}}} to an enum or a number.")
    return found
