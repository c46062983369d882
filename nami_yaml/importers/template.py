"""A shell command template of another format (Jinja, ``<<x>>``) -> a nami runner.

The source formats all render their values into shell text and hand it to ``sh -c``. Their templates arrive
here already parsed into :class:`Text`, :class:`Var` and :class:`Optional` pieces (each format parses its
own placeholders with its own parser), and become either

- a ``command:`` argv, when the text is plainly one command: words separated by blanks, quotes that only
  group, no pipe, redirection, expansion or second command (``{% else %}`` becomes a group switched on by
  ``{!name}``);
- a ``pipeline:`` of such argvs when only pipes join them, its last stages ``output:`` filters (``grep
  PATTERN``, ``head``/``tail -n N``) where nami's own filters do the same; or
- a ``script:`` where every value is read from its environment variable, quoted for the place it stood in
  (``"${x}"`` outside quotes, ``${x}`` inside double quotes, ``'"${x}"'`` closing and reopening single
  quotes): the value is never spliced into shell text.

Reading the shell text is a small quote-state scanner: it only has to know whether a character is inside
single quotes, double quotes or neither, and whether something outside quotes asks a shell for more than
splitting words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

NONE, SINGLE, DOUBLE = "none", "single", "double"
# Outside quotes these make the text more than one plain command (pipes, lists, redirections, expansions,
# globs, comments, line continuations and subshells).
SHELL_SYNTAX = set("|&;<>()$`*?[]~#\\\n") | {"{", "}"}
INSIDE_DOUBLE_SYNTAX = set("$`\\")  # what a shell still interprets inside double quotes


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Optional:
    """``{% if x %} -n {{ x }}{% endif %}``: kept when ``name`` is given."""

    name: str
    body: tuple[Text | Var, ...]
    otherwise: tuple[Text | Var, ...] | None = None  # {% else %}


Piece = Text | Var | Optional


@dataclass
class Converted:
    """``command`` (an argv template) or ``script``; ``why_script`` says what needed the shell."""

    command: list | None = None
    pipeline: list[list] | None = None  # stages; with ``command`` None
    output: dict[str, Any] = field(default_factory=dict)  # output filters that replaced the last stages
    filtered: list[str] = field(default_factory=list)  # what each filter replaced, for the report
    script: str | None = None
    why_script: str = ""
    split_values: list[str] = field(default_factory=list)  # values a shell split into words, one argument now
    dropped: list[str] = field(default_factory=list)  # 2>&1, 2>/dev/null: nami returns stderr on its own
    problem: str = ""  # not convertible at all


def convert(pieces: Sequence[Piece], optional: set[str], *, script_only: str = "") -> Converted:
    """The runner for ``pieces``; ``optional`` names the parameters a call may leave out; ``script_only``:
    why it must stay a script whatever it looks like."""
    pieces = pieces_before = _one_line(pieces)
    dropped: list[str] = []
    if not script_only:
        pieces, dropped = _without_stderr_redirects(pieces)
    why = script_only or _needs_shell(pieces)
    if not why:
        words = _words(pieces, optional)
        why = words if isinstance(words, str) else _program_problem(words)
        if not why:
            return Converted(command=words, split_values=_split_values(pieces), dropped=dropped)
    elif not script_only and "'|'" in why:
        piped = _pipeline(pieces, optional)
        if isinstance(piped, Converted):
            piped.dropped = dropped
            return piped
        why = piped or why
    if dropped:  # a script keeps them as they were
        return convert(pieces_before, optional, script_only=why)
    script = _script(pieces)
    if script.startswith("!"):
        return Converted(problem=script[1:])
    return Converted(script=script, why_script=why)


STDERR_REDIRECTS = ("2>&1", "2>/dev/null")


def _without_stderr_redirects(pieces: Sequence[Piece]) -> tuple[list[Piece], list[str]]:
    """``cmd 2>&1`` and ``cmd 2>/dev/null`` (as words, outside quotes) left out: nami returns a command's
    stderr after its output either way, so they need no shell."""
    out: list[Piece] = []
    dropped: list[str] = []
    state = NONE
    for piece in pieces:
        if not isinstance(piece, Text):
            out.append(piece)
            continue
        text, index = "", 0
        while index < len(piece.text):
            found = next((r for r in STDERR_REDIRECTS if piece.text.startswith(r, index)), None)
            before, after = piece.text[index - 1:index], piece.text[index + len(found or ""):][:1]
            if found and state == NONE and before in (" ", "\t") and after in ("", " ", "\t", "\n"):
                dropped.append(found)
                index += len(found)
                continue
            state, _ = _step(state, piece.text[index])
            text += piece.text[index]
            index += 1
        out.append(Text(text))
    return (_one_line(out), dropped) if dropped else (list(pieces), [])


def _one_line(pieces: Sequence[Piece]) -> list[Piece]:
    """Without the trailing newline of a YAML block (``command: |``), and with lines continued by a backslash
    joined: still one command."""
    joined = [Text(p.text.replace("\\\n", " ")) if isinstance(p, Text) else p for p in pieces]
    while joined and isinstance(joined[-1], Text) and not joined[-1].text.strip():
        joined.pop()
    if joined and isinstance(joined[-1], Text):
        joined[-1] = Text(joined[-1].text.rstrip())
    return joined


def _needs_shell(pieces: Sequence[Piece]) -> str:
    state = NONE
    for piece in pieces:
        texts = [piece] if isinstance(piece, Text) else list(piece.body) if isinstance(piece, Optional) else []
        for text in (t for t in texts if isinstance(t, Text)):
            for char in text.text:
                state, special = _step(state, char)
                if special:
                    return f"the command uses the shell ({char!r} outside quotes)"
    return ""


def _step(state: str, char: str) -> tuple[str, bool]:
    """The quote state after ``char``, and whether the char asks the shell for more than word splitting."""
    if state == SINGLE:
        return (NONE if char == "'" else SINGLE), False
    if state == DOUBLE:
        if char == '"':
            return NONE, False
        return DOUBLE, char in INSIDE_DOUBLE_SYNTAX
    if char == "'":
        return SINGLE, False
    if char == '"':
        return DOUBLE, False
    return NONE, char in SHELL_SYNTAX


def _words(pieces: Sequence[Piece], optional: set[str]) -> list | str:
    """Argv elements (strings with ``{x}`` placeholders, optional groups as lists), or why not."""
    argv: list = []
    current: list[str] | None = None  # the word being built, as pieces of template text
    names: set[str] = set()
    state = NONE

    def end_word(into: list) -> None:
        nonlocal current, names
        if current is not None:
            word = "".join(current)
            loose = sorted(n for n in names if n in optional)
            into.append([word] if loose else word)  # an optional value alone: left out when not given
        current, names = None, set()

    for piece in pieces:
        if isinstance(piece, Optional):
            starts_blank = any(bool(part) and isinstance(part[0], Text) and part[0].text[:1] in " \t"
                               for part in (piece.body, piece.otherwise or ()))
            if starts_blank and state == NONE:
                end_word(argv)
            if current is not None or state != NONE:
                return f"an optional part ({{% if {piece.name} %}}) is glued to a word or inside quotes"
            group: list = []
            inner = _words(piece.body, set())
            if isinstance(inner, str):
                return inner
            group.extend(inner)
            if not any(f"{{{piece.name}}}" in str(word) for word in group):
                group.append(f"{{{piece.name}}}")  # a boolean that only switches its group
            argv.append(group)
            if piece.otherwise:  # {% else %}: a group switched on when the parameter is off
                other = _words(piece.otherwise, set())
                if isinstance(other, str):
                    return other
                if other:
                    argv.append([*other, f"{{!{piece.name}}}"])
            continue
        if isinstance(piece, Var):
            current = (current or []) + [f"{{{piece.name}}}"]
            names.add(piece.name)
            continue
        for char in piece.text:
            if state == NONE and char in " \t":
                end_word(argv)
                continue
            new_state, _ = _step(state, char)
            if new_state != state and char in "'\"":
                current = current if current is not None else []  # '' is an empty word
                state = new_state
                continue
            state = new_state
            current = (current or []) + [_escaped(char)]
    if state != NONE:
        return "a quote is not closed"
    end_word(argv)
    return argv


def _pipeline(pieces: Sequence[Piece], optional: set[str]) -> Converted | str:
    """Commands joined only by pipes: a ``pipeline:`` of argvs, its last stages output filters where nami's
    own do the same; or why not."""
    stages: list[list[Piece]] = [[]]
    state = NONE
    for piece in pieces:
        if not isinstance(piece, Text):
            stages[-1].append(piece)
            continue
        text = ""
        for index, char in enumerate(piece.text):
            if state == NONE and char == "|":
                if piece.text[index + 1:index + 2] in ("|", "&") or piece.text[index - 1:index] == "|":
                    return "the command uses the shell ('||' or '|&' outside quotes)"
                stages[-1].append(Text(text))
                stages.append([])
                text = ""
                continue
            state, _ = _step(state, char)
            text += char
        stages[-1].append(Text(text))
    argvs: list[list] = []
    for stage in stages:
        stage = _one_line(stage)
        words = _needs_shell(stage) or _words(stage, optional)
        if isinstance(words, str):
            return words
        why = _program_problem(words)
        if why:
            return why
        argvs.append(words)
    output: dict[str, Any] = {}
    filtered: list[str] = []
    while len(argvs) > 1:
        found = _as_filter(argvs[-1])
        if not found or found[0] in output or any(FILTERS.index(found[0]) > FILTERS.index(k) for k in output):
            break
        output[found[0]] = found[1]
        filtered.insert(0, " ".join(str(word) for word in argvs.pop()))
    output = {key: output[key] for key in FILTERS if key in output}  # the order nami applies them in
    if len(argvs) == 1:
        return Converted(command=argvs[0], output=output, filtered=filtered, split_values=_split_values(pieces))
    return Converted(pipeline=argvs, output=output, filtered=filtered, split_values=_split_values(pieces))


# Bash builtins with no program of the same name: run without a shell, there would be nothing to run.
SHELL_ONLY = frozenset({"history", "alias", "cd", "source", ".", "export", "set", "unset", "ulimit", "umask", "jobs",
                        "fg", "bg", "type", "hash", "read", "declare", "local", "eval", "exec", "trap", "shopt",
                        "wait", "let", "builtin", "command", "compgen", "complete", "dirs", "pushd", "popd",
                        "disown", "enable", "fc", "help", "logout", "mapfile", "readarray", "suspend", "times",
                        "typeset", "readonly", "caller", "getopts"})


def _program_problem(words: list) -> str:
    """Why an argv could not run as written: no fixed program, or a shell builtin."""
    if not words or not isinstance(words[0], str) or "{" in words[0]:
        return "the program itself is chosen by a value or an {% if %}"
    if words[0] in SHELL_ONLY:
        return f"{words[0]} is a shell builtin, not a program"
    return ""


FILTERS = ("grep", "lines", "head", "tail")  # nami's output filters, in the order it applies them
# Characters a grep basic regular expression reads literally but Python's re does not (or the reverse).
_NOT_THE_SAME_REGEX = re.compile(r"[+?{}|()\\]")
_COUNT = re.compile(r"-n?(\d+)|--lines=(\d+)")


def _as_filter(words: list) -> tuple[str, Any] | None:
    """``grep PATTERN``, ``head``/``tail`` [``-n N``]: the output filter doing the same, or None."""
    if any(not isinstance(word, str) for word in words):
        return None
    program, rest = words[0], words[1:]
    if program == "grep":
        rest = words[2:] if words[1:2] == ["-e"] else rest
        if len(rest) != 1 or (words[1:2] != ["-e"] and rest[0].startswith("-")):
            return None  # grep with options of its own stays a stage
        pattern = rest[0]
        whole = re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_-]*\}", pattern)
        if whole or not _NOT_THE_SAME_REGEX.search(pattern.replace("{{", "").replace("}}", "")):
            return "grep", pattern
        return None
    if program not in ("head", "tail"):
        return None
    if not rest:
        return program, 10
    if rest[:1] == ["-n"] and len(rest) == 2:
        count = rest[1]
        if count.isdigit():
            return program, int(count)
        return (program, count) if re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_-]*\}", count) else None
    named = re.fullmatch(r"-n?(\{[A-Za-z_][A-Za-z0-9_-]*\})", rest[0]) if len(rest) == 1 else None
    if named:  # head -{count}
        return program, named.group(1)
    found = _COUNT.fullmatch(rest[0]) if len(rest) == 1 else None
    return (program, int(found.group(1) or found.group(2))) if found else None


def _escaped(char: str) -> str:
    return {"{": "{{", "}": "}}"}.get(char, char)


def _split_values(pieces: Sequence[Piece]) -> list[str]:
    """Values that stood alone and unquoted: a shell split them into several words (``curl <<arguments>>``)."""
    found, state, previous = [], NONE, " "
    flat = [p for piece in pieces for p in (piece.body if isinstance(piece, Optional) else [piece])]
    for index, piece in enumerate(flat):
        if isinstance(piece, Text):
            for char in piece.text:
                state, _ = _step(state, char)
            previous = piece.text[-1:] or previous
            continue
        following = flat[index + 1] if index + 1 < len(flat) else Text(" ")
        after = following.text[:1] if isinstance(following, Text) else "x"
        if state == NONE and previous in " \t" and after in ("", " ", "\t"):
            found.append(piece.name)
        previous = "x"
    return found


class _Quoting:
    """Where a script's text stands: in single quotes, double quotes or neither, counting command
    substitutions, which start a fresh unquoted context even inside double quotes (``"$(grep {{ x }})"``)."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, str]] = [(NONE, "")]  # (quoting, what closes it)
        self.previous = ""
        self.escaped = False

    @property
    def state(self) -> str:
        return self.stack[-1][0]

    def feed(self, text: str) -> None:
        for char in text:
            self._one(char)
            self.previous = char

    def _one(self, char: str) -> None:
        state, closer = self.stack[-1]
        if self.escaped:
            self.escaped = False
            return
        if state == SINGLE:
            if char == "'":
                self.stack.pop()
            return
        if char == "\\":
            self.escaped = True
        elif char == "(" and self.previous == "$":
            self.stack.append((NONE, ")"))
        elif char == "`":
            self.stack.pop() if closer == "`" else self.stack.append((NONE, "`"))
        elif state == DOUBLE:
            if char == '"':
                self.stack.pop()
        elif char == closer and len(self.stack) > 1:
            self.stack.pop()
        elif char == "'":
            self.stack.append((SINGLE, "'"))
        elif char == '"':
            self.stack.append((DOUBLE, '"'))


def _script(pieces: Sequence[Piece]) -> str:
    """Bash text reading every value from its variable; ``!why`` when a piece has no safe spelling."""
    out: list[str] = []
    prelude: list[str] = []
    quoting = _Quoting()
    for piece in pieces:
        state = quoting.state
        if isinstance(piece, Text):
            quoting.feed(piece.text)
            out.append(piece.text)
        elif isinstance(piece, Var):
            out.append(_reference(piece.name, state))
        else:
            body = _script(piece.body)
            if body.startswith("!"):
                return body
            if piece.otherwise is not None:
                otherwise = _script(piece.otherwise)
                blank = ("", " ", "\t", "\n")
                glued = out and out[-1][-1:] not in blank and (body[:1] not in blank or otherwise[:1] not in blank)
                if otherwise.startswith("!") or state != NONE or glued or "\n" in body + otherwise:
                    return f"!the {{% if {piece.name} %}}…{{% else %}} part is not whole words of one line"
                array = f"nami_part{len(prelude) + 1}"
                prelude.append(f'if [ -n "${{{piece.name}:-}}" ]; then {array}=({body}); else {array}=({otherwise}); fi\n')
                out.append(f' "${{{array}[@]}}"')
                continue
            if state != NONE or "\n" in body or "}" in body.replace(f"${{{piece.name}}}", ""):
                return (f"!the optional part {{% if {piece.name} %}} cannot be written as ${{{piece.name}:+…}} "
                        "(inside quotes, several lines or braces)")
            out.append(f"${{{piece.name}:+{body}}}")
    return "".join(prelude + out)


def _reference(name: str, state: str) -> str:
    if state == SINGLE:
        return f"'\"${{{name}}}\"'"  # close the single quotes, the value in double quotes, reopen
    if state == DOUBLE:
        return f"${{{name}}}"
    return f'"${{{name}}}"'
