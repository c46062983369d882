"""Reading a bash command line the way bash will, so rules can decide on the commands in it.

Rules never match shell text: ``git status; rm -rf x`` is not "a command starting with git status". The
line is parsed with tree-sitter-bash (a real grammar, imported only when a bash rule is evaluated) and is
*clear* only when it is simple commands of static words joined by ``&&``, ``||``, ``;``, newlines or
``|``. Anything whose effect the words do not show makes it *opaque*, with the reason: substitutions,
expansions, globs, redirections to files, here-documents, subshells and groups, control flow, functions,
variable assignments, background jobs, commands that run other commands (``bash -c``, ``eval``, ``env``,
``xargs``, ``sudo``…), options that run or write something (``find -exec``, ``git -c``…), characters the
parser and bash may read differently, and anything that does not parse.

Separately, every command that can be seen anywhere in the line (inside substitutions, behind ``sudo`` or
``xargs``, in a ``bash -c`` string) is collected, so a deny rule also catches a denied command that is
hidden; that search is best effort, and whatever it misses is opaque and therefore asked about.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import pairwise
from typing import Any

from nami_yaml.shell.command_risks import (
    FIND_RUNS,
    RUNNERS,
    SHELL_STRING,
    Word,
    command_problem,
    runner_command,
    runner_end,
)

MAX_LENGTH = 100_000  # longer command lines are not analysed (they are asked about)
MAX_NESTED_PARSES = 64  # `bash -c` strings, eval arguments… parsed for hidden commands, per command line
MAX_DEPTH = 4
# Words in all the commands collected for deny rules, per command line: a runner's tails cost the square
# of its length (`find -exec ` repeated 300 times once took gigabytes). Past it the search stops and the
# line is opaque, so it is asked about.
MAX_SEEN_WORDS = 250_000

_ALLOWED_TEXT = frozenset(" \t\n")
_GLOB = frozenset("*?[")
_DUP_TARGET = "0123456789-"


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    problem: str | None = None  # a runner or an option that runs something: never allowed by a prefix

    @property
    def name(self) -> str | None:
        return self.words[0] if self.words else None

    def text(self) -> str:
        import shlex

        return " ".join("…" if w is None else shlex.quote(w) for w in self.words)


@dataclass
class Analysis:
    commands: list[SimpleCommand] = field(default_factory=list)  # the top-level simple commands, in order
    seen: list[SimpleCommand] = field(default_factory=list)  # every command found anywhere, for deny/ask
    syntax: str | None = None  # why the structure is not simple commands of static words
    unreadable: bool = False  # bash and the parser may read it differently, or it was not (fully) read
    tree: Any = None  # the parsed line (tree-sitter's root node), for the deny rules' reading (hidden.py)

    @property
    def opaque(self) -> str | None:
        """Why rules cannot see what this command line runs, or None when they can."""
        if self.syntax:
            return self.syntax
        if not self.commands:
            return "it runs no command"
        return next((c.problem for c in self.commands if c.problem), None)


class ParserMissing(RuntimeError):
    pass


@cache
def _parser() -> Any:
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError as exc:  # a core dependency; a broken install must not become an allow
        raise ParserMissing(f"the bash parser is not installed ({exc}); pip install tree-sitter-bash") from None
    return Parser(Language(tree_sitter_bash.language()))


def analyse(command: str) -> Analysis:
    """What ``bash -c command`` would run, as far as rules can tell."""
    analysis = Analysis()
    if len(command) > MAX_LENGTH:
        analysis.syntax = f"it is longer than {MAX_LENGTH:,} characters"
        analysis.unreadable = True
        return analysis
    budget = _Budget()
    try:
        root = _parse(command)
    except ParserMissing as exc:
        analysis.syntax = str(exc)
        analysis.unreadable = True
        return analysis
    analysis.tree = root
    read_through = False  # the structure was read, whatever it holds
    odd = _odd_character(command)
    if odd:
        analysis.syntax = f"it contains {odd}, which bash and the parser may read differently"
    elif "\\\n" in command:
        # tree-sitter-bash splits a word at a backslash-newline; bash joins it (r\<newline>m is rm).
        analysis.syntax = "it contains a line continuation (backslash-newline)"
    elif "\\ " in command or "\\\t" in command:
        # tree-sitter-bash drops an escaped blank that starts a word (`\ ls` reads as `ls`; bash runs " ls").
        analysis.syntax = "it contains an escaped space (backslash-space)"
    elif root.has_error:
        analysis.syntax = "it does not parse as bash"
    elif _split_word(root, command):
        analysis.syntax = f"bash reads `{_split_word(root, command)}` as one word where the parser sees two"
    else:
        read_through = True
        reasons: list[str] = []
        try:
            _structure(root, analysis.commands, reasons)
        except RecursionError:  # `ls && ` thousands of times nests lists as deep
            analysis.commands, reasons = [], ["it nests commands too deeply to read"]
            analysis.unreadable = True
        analysis.syntax = reasons[0] if reasons else None
    if analysis.syntax and not read_through:
        analysis.unreadable = True
    analysis.seen = list(_seen(root, budget, 0))
    if "\\\n" in command:  # what bash reads once the continuations are joined (best effort, for deny rules)
        analysis.seen += _seen(_parse(command.replace("\\\n", "")), budget, 0)
    if budget.exhausted:
        analysis.syntax = analysis.syntax or "it holds more commands run by other commands than rules search"
        analysis.unreadable = True
    return analysis


@lru_cache(maxsize=256)
def analysed(command: str) -> Analysis:
    """``analyse``, remembered: a line is read by several rules and by the deny rules' reading."""
    return analyse(command)


def prefix_words(text: str) -> tuple[str, ...] | str:
    """The words of a rule's command prefix, or why it is not one simple command of static words."""
    try:
        root = _parse(text)
    except ParserMissing as exc:
        return str(exc)
    commands: list[SimpleCommand] = []
    reasons: list[str] = []
    if (root.has_error or _odd_character(text) or "\\\n" in text or "\\ " in text or "\\\t" in text
            or _split_word(root, text)):
        return "it does not parse as one command"
    try:
        _structure(root, commands, reasons)
    except RecursionError:
        return "it nests commands too deeply to read"
    if reasons:
        return reasons[0]
    if len(commands) != 1:
        return "give one command per entry (a list holds several)"
    return tuple(w for w in commands[0].words if w is not None)


def _parse(text: str) -> Any:
    return _parser().parse(text.encode("utf-8", "surrogatepass")).root_node


def _odd_character(text: str) -> str | None:
    """Control, format and separator characters other than space, tab and newline: tree-sitter counts
    some of them as blanks where bash sees part of a word (a carriage return, a no-break space)."""
    for char in text:
        if char not in _ALLOWED_TEXT and unicodedata.category(char)[0] in "CZ":
            return f"the character U+{ord(char):04X}"
    return None


_SEPARATED = frozenset({"program", "list", "pipeline", "negated_command", "redirected_statement", "command",
                        "file_redirect"})
_OPERATOR_CHARS = frozenset("<>&|;()")


def _split_word(root: Any, text: str) -> str | None:
    """Two sibling words with nothing between them: tree-sitter-bash starts a new word at a backslash
    after a quote (`cat''\\-la`, `>/dev/null''\\x`), where bash goes on with the same word."""
    data = text.encode("utf-8", "surrogatepass")
    for node in walk_tree(root):
        if node.type not in _SEPARATED:
            continue
        named = [c for c in node.children if c.is_named]
        for left, right in pairwise(named):
            if left.end_byte != right.start_byte or left.end_byte == 0 or right.start_byte >= len(data):
                continue
            if chr(data[left.end_byte - 1]) in _OPERATOR_CHARS or chr(data[right.start_byte]) in _OPERATOR_CHARS:
                continue  # ls>x, x|y: an operator separates them in bash too
            return data[left.start_byte:right.end_byte].decode("utf-8", "replace")
    return None


# -- the structure: what runs, in which order ----------------------------------------------------------

def _structure(node: Any, out: list[SimpleCommand], reasons: list[str]) -> None:
    kind = node.type
    if kind == "program":
        for child in node.children:
            if child.type == "&":
                reasons.append("it runs a command in the background (&)")
            elif not child.is_named:
                if child.type != ";":
                    reasons.append(f"it uses {child.type}")
            elif child.type != "comment":
                _structure(child, out, reasons)
    elif kind in ("list", "pipeline"):
        joins = ("&&", "||") if kind == "list" else ("|", "|&")
        for child in node.children:
            if child.is_named:
                _structure(child, out, reasons)
            elif child.type not in joins:
                reasons.append(f"it uses {child.type}")
    elif kind == "negated_command":
        for child in node.named_children:
            _structure(child, out, reasons)
    elif kind == "redirected_statement":
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "body":
                _structure(child, out, reasons)
            elif child.is_named:
                _redirect(child, reasons)
    elif kind == "command":
        out.append(_simple(node, reasons))
    else:
        reasons.append(_CONSTRUCTS.get(kind, f"it uses a {kind.replace('_', ' ')}"))


_CONSTRUCTS = {
    "subshell": "it runs a subshell ( … )",
    "compound_statement": "it groups commands in { … }",
    "function_definition": "it defines a function",
    "variable_assignment": "it sets a variable",
    "variable_assignments": "it sets variables",
    "declaration_command": "it declares or exports variables",
    "unset_command": "it unsets variables",
    "if_statement": "it uses if", "while_statement": "it uses a loop", "for_statement": "it uses a loop",
    "c_style_for_statement": "it uses a loop", "case_statement": "it uses case",
    "test_command": "it uses a [[ … ]] test",
}


def _simple(node: Any, reasons: list[str]) -> SimpleCommand:
    words: list[Word] = []
    for index, child in enumerate(node.children):
        role = node.field_name_for_child(index)
        if child.type == "variable_assignment":
            reasons.append("it sets environment variables for a command (NAME=value cmd)")
        elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            _redirect(child, reasons)
        elif role == "name":
            value = static_value(child.named_children[0]) if child.named_children else None
            if value is None:
                reasons.append("the command name is computed (" + _why_dynamic(child) + ")")
            words.append(value)
        elif child.is_named and child.type != "comment":
            value = static_value(child)
            if value is None:
                reasons.append(f"an argument is computed ({_why_dynamic(child)})")
            words.append(value)
        elif not child.is_named:
            reasons.append(f"it uses {child.type}")
    return SimpleCommand(tuple(words), command_problem(tuple(words)))


def _redirect(node: Any, reasons: list[str]) -> None:
    """Allowed: duplicating or closing descriptors (2>&1, >&-) and /dev/null; anything else is a file."""
    if node.type != "file_redirect":
        reasons.append("it uses a here-document or here-string")
        return
    lost = _lost_words(node)
    if lost:
        words = " ".join(w.text.decode("utf-8", "replace") for w in lost)
        reasons.append(f"bash passes `{words}` after the redirection to the command, the parser reads it as "
                       "the redirection's target")
        return
    operator = redirect_operator(node)
    destination = _destinations(node)
    target = static_value(destination[0]) if destination else None
    if operator in (">&-", "<&-"):
        return
    if operator in (">&", "<&") and target and all(ch in _DUP_TARGET for ch in target):
        return
    if operator in (">", ">>", "&>", "&>>", ">|", "<") and target == "/dev/null":
        return
    reasons.append(f"it redirects to or from a file ({node.text.decode('utf-8', 'replace')})")


def redirect_operator(node: Any) -> str:
    return next((c.type for c in node.children if not c.is_named), "")


def _destinations(node: Any) -> list[Any]:
    return [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "destination"]


def _lost_words(node: Any) -> list[Any]:
    """Words tree-sitter-bash takes as more targets of a redirection where bash ends the redirection and
    passes them to the command as arguments: those after the target (`find . >/dev/null -delete` runs
    `find . -delete`), and any after `>&-` or `<&-`, which take no target (`ls >&-x` runs `ls x`)."""
    if node.type != "file_redirect":
        return []
    destination = _destinations(node)
    return destination if redirect_operator(node) in (">&-", "<&-") else destination[1:]


# -- words ---------------------------------------------------------------------------------------------

def static_value(node: Any) -> Word:
    """The value of a word after quote removal, or None when bash computes it."""
    kind = node.type
    text = node.text.decode("utf-8", "surrogateescape")
    if text == "{}" and kind in ("word", "concatenation"):
        return "{}"  # no brace expansion without a comma or ..: find -exec … {} +, xargs -I{}
    if kind == "word":
        return _unquoted_word(text)
    if kind == "number":
        return text if text.lstrip("-").isalnum() else None
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        # Taken from the source between the quotes: tree-sitter leaves the newlines out of its children.
        if any(child.type not in ('"', "string_content") for child in node.children):
            return None
        return _double_quoted(text[1:-1])
    if kind == "concatenation":
        parts = node.children
        if any(a.end_byte != b.start_byte for a, b in pairwise(parts)):
            return None
        if ("," in text or ".." in text) and any(c.type == "word" and any(b in c.text for b in (b"{", b"}"))
                                                 for c in parts):
            return None  # a{b,c}: tree-sitter keeps the braces as words of their own
        values = [static_value(child) for child in parts]
        return None if any(v is None for v in values) else "".join(v for v in values if v is not None)
    return None


def _unquoted_word(text: str) -> Word:
    # Braces expand only around a comma or `..` (`{a,b}`, `{1..3}`); `-I{}` and `{x}` are as written.
    braces = "{}" if "," in text or ".." in text else ""
    out = []
    escaped = False
    for char in text:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _GLOB or char in braces or char in "$`":
            return None  # globs and brace expansion make file names or several words
        else:
            out.append(char)
    return "".join(out)


def _double_quoted(text: str) -> str:
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


_DYNAMIC = {
    "command_substitution": "command substitution $(…)",
    "process_substitution": "process substitution <(…)",
    "simple_expansion": "variable expansion $NAME",
    "expansion": "variable expansion ${…}",
    "arithmetic_expansion": "arithmetic expansion $((…))",
    "ansi_c_string": "a $'…' string",
    "translated_string": "a $\"…\" string",
    "brace_expression": "brace expansion {…}",
}


def _why_dynamic(node: Any) -> str:
    for child in walk_tree(node):
        if child.type in _DYNAMIC:
            return _DYNAMIC[child.type]
    text = node.text.decode("utf-8", "replace")
    if any(ch in text for ch in "{}"):
        return "brace expansion {…}"
    if any(ch in text for ch in _GLOB):
        return "a glob pattern that expands to file names"
    return f"`{text}`"


def walk_tree(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


# -- every command in sight, for deny and ask rules ----------------------------------------------------

@dataclass
class _Budget:
    """What the search for hidden commands may still spend on one command line."""

    parses: int = MAX_NESTED_PARSES
    words: int = MAX_SEEN_WORDS
    exhausted: bool = False

    def take(self, command: SimpleCommand) -> bool:
        self.words -= len(command.words)
        self.exhausted = self.exhausted or self.words < 0
        return not self.exhausted


def _seen(root: Any, budget: _Budget, depth: int) -> Iterator[SimpleCommand]:
    for node in walk_tree(root):
        if node.type == "command":
            words = command_words(node)
        elif node.type == "redirected_statement":
            words = _with_lost_words(node)
        else:
            continue
        if not words or words[0] is None:
            continue
        command = SimpleCommand(words)
        if not budget.take(command):
            return
        yield command
        yield from _behind(words, budget, depth)


def command_words(node: Any) -> tuple[Word, ...]:
    words = [static_value(c.named_children[0]) if c.type == "command_name" and c.named_children else static_value(c)
             for c in node.children
             if c.is_named and c.type not in ("variable_assignment", "file_redirect", "heredoc_redirect",
                                              "herestring_redirect", "comment")]
    for child in node.children:  # `git >/dev/null push` inside a substitution or a bash -c string
        words += [static_value(w) for w in _lost_words(child)]
    return tuple(words)


def _with_lost_words(node: Any) -> tuple[Word, ...]:
    """The command as bash reads it when the parser took some of its words for redirection targets:
    ``git >/dev/null push --force`` is ``git push --force``. Empty when no words were lost."""
    lost = [static_value(w) for child in node.children for w in _lost_words(child)]
    body = node.child_by_field_name("body")
    while body is not None and body.type == "pipeline" and body.named_children:
        body = body.named_children[-1]  # a pipeline's redirection belongs to its last command
    if not lost or body is None or body.type != "command":
        return ()
    words = command_words(body)
    redirect = next(c for c in node.children if c.type == "file_redirect")
    last = body.children[-1] if body.children else None
    if last is not None and last.type == "number" and last.end_byte == redirect.start_byte:
        words = words[:-1]  # `git 0</dev/null push`: the 0 is the redirection's descriptor
    return words + tuple(lost)


def _behind(words: tuple[Word, ...], budget: _Budget, depth: int) -> Iterator[SimpleCommand]:
    """Commands a runner would run: every tail of its words (``sudo -u x rm …`` holds ``rm …``), and its
    string arguments read as command lines (``bash -c 'rm …'``, ``eval rm …``)."""
    starts = tail_starts(words)
    for start in starts:
        tail = SimpleCommand(words[start:])
        if not budget.take(tail):
            return
        yield tail
    if depth >= MAX_DEPTH:
        return
    for start in (0, *starts):
        head = words[start]
        if head is None or os.path.basename(head) not in SHELL_STRING:
            continue
        static = [w for w in words[start + 1:] if w is not None]
        for text in {*static, " ".join(static)}:
            if budget.parses <= 0 or budget.exhausted:
                return
            budget.parses -= 1
            try:
                yield from _seen(_parse(text), budget, depth + 1)
            except ParserMissing:
                return


def tail_starts(words: tuple[Word, ...]) -> list[int]:
    """Where a command run by another may start, each position once: every word after a runner (``sudo
    -u x rm``) or a runner sub-command (``git bisect run rm``), the word after find's ``-exec``, and so on
    behind those (``sudo find . -exec rm``)."""
    starts: list[int] = []
    after_runner = after_find = False
    runner_from: int | None = None
    for index, word in enumerate(words):
        behind = after_runner or (runner_from is not None and index >= runner_from)
        if index and (behind or (after_find and words[index - 1] in FIND_RUNS)):
            if word is None:
                continue
            starts.append(index)
        elif index:
            continue
        if word is not None:
            head = os.path.basename(word)
            after_runner = after_runner or head in RUNNERS
            after_find = after_find or head == "find"
            if runner_from is None:
                runner = runner_command(words, index)
                runner_from = runner_end(words, runner, index) if runner else None
    return starts
