"""Whether a command line could run a program it does not name: what a deny rule must assume about it.

An "ask" can be approved (``--yes``, ``--approve exec``, a batch); a "deny" never is. So where a deny rule
could match a line nami cannot read as plainly what it says, the line is denied, not asked about. This
module says when a line could run a program without naming it as a literal word in command position:

- a command name computed when the line runs (``$x``, ``$(printf rm)``, ``r${x}m``, ``{}`` behind find or
  xargs), or a shell or ``eval`` given a computed command line;
- a shell or an interpreter that reads its code from the line's input (``… | sh``, ``sh <<< …``), or that runs
  behind another command which fills in its words (``xargs sh -c``), or an interpreter's inline code
  (``python -c``), or a sed script or awk program that is not inert;
- a builtin that runs code hidden in words or rebinds a name (``printf -v 'BASH_CMDS[ls]'``, ``hash -p``,
  ``read 'a[$(…)]'``), an option that runs a program (``rg --pre``, ``git -c``), arithmetic on a
  variable (bash evaluates its value: ``x='a[$(rm …)]'; echo $((x))``), an assignment that changes which
  program a name runs (``PATH``, ``BASH_CMDS[…]``, ``BASH_ENV``…), or the environment of a command
  computed when the line runs (``PAGER=$x man ls``);
- a word computed when the line runs given to a program that could run one through an option
  (``rg $opts``; ``ls $dir`` is fine: ls runs nothing whatever its words);
- and the same in any word nami cannot read as inert that a program may run as a command line
  (``git ls-remote --upload-pack='echo … | base64 -d | sh'``): such words are read as command lines too.

It does not read files: a script the line runs (``bash x.sh``, ``python manage.py``, ``make``) may run
anything. What is found here only ever makes a line denied where a deny rule exists; the search is bounded
(it stops, and says so, past a number of nested command lines or characters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from nami_yaml.shell.bash import (
    analysed,
    command_words,
    redirect_operator,
    static_value,
    tail_starts,
    walk_tree,
)
from nami_yaml.shell.command_risks import (
    CODE_BUILTINS,
    INTERPRETERS,
    SHELL_STRING,
    SHELLS,
    Word,
    code_problem,
    program_name,
)
from nami_yaml.shell.plain import read_plainly, runs_nothing, script_problem

MAX_PARSES = 64  # words and strings read as command lines, per line
MAX_CHARS = 200_000  # their characters, all together
MAX_DEPTH = 4
MAX_TAIL_WORDS = 250_000  # words in the commands behind runners (`sudo sudo sudo …`), all together

# Variables that change which program a name runs, or make every program load code.
RESOLVING = frozenset({"PATH", "BASH_CMDS", "BASH_ALIASES", "BASH_ENV", "ENV", "BASHOPTS", "SHELLOPTS", "PS4",
                       "IFS", "EXECIGNORE", "BASH_LOADABLES_PATH", "PROMPT_COMMAND", "LD_PRELOAD", "LD_AUDIT",
                       "LD_LIBRARY_PATH"})
_SHELL_TEXT = frozenset(" \t\n;&|<>()$`'\"\\*?[{~")
_IDENTIFIERS = frozenset({"word", "variable_name", "simple_expansion", "expansion", "subscript",
                          "command_substitution", "string", "raw_string"})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_INPUT = frozenset({"<", "<&", "<>", "<&-"})
_STDIN_PATHS = ("/dev/", "/proc/")
_ENV_SETTERS = frozenset({"env", "sudo", "doas"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_XARGS_VALUED = frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e", "-i", "-l"})
_READ = frozenset({
    "program", "list", "pipeline", "negated_command", "redirected_statement", "subshell", "compound_statement",
    "if_statement", "elif_clause", "else_clause", "while_statement", "for_statement", "case_statement",
    "case_item", "do_group", "function_definition", "comment", "command", "command_name", "word", "raw_string",
    "string", "string_content", "concatenation", "number", "simple_expansion", "expansion",
    "command_substitution", "process_substitution", "variable_name", "special_variable_name", "file_redirect",
    "heredoc_redirect", "herestring_redirect", "heredoc_start", "heredoc_body", "heredoc_end", "heredoc_content",
    "file_descriptor", "extglob_pattern", "regex", "array", "brace_expression", "ansi_c_string",
    "translated_string", "test_command", "test_operator", "binary_expression", "unary_expression",
    "parenthesized_expression", "postfix_expression", "ternary_expression", "subscript", "variable_assignment",
    "variable_assignments", "declaration_command", "unset_command", "arithmetic_expansion",
    "c_style_for_statement",
})


@lru_cache(maxsize=256)
def hidden_reason(command: str) -> str | None:
    """Why this line could run a program it does not name, or None when every program it runs is named."""
    return _Reading().line(command, 0)


def names_in(command: str) -> frozenset[str]:
    """Every word-like piece of the line, quotes and backslashes removed, in lower case: `'r''m'`, `r\\m`
    and `/bin/rm` all hold `rm`. A denied program named anywhere in a line nami cannot read is denied."""
    text = command.translate({ord("\\"): None, ord("'"): None, ord('"'): None}).lower()
    return frozenset(re.findall(r"[a-z0-9_.+-]+", text))


@dataclass
class _Reading:
    parses: int = MAX_PARSES
    chars: int = MAX_CHARS
    tail_words: int = MAX_TAIL_WORDS
    cleared: set[tuple[tuple[Word, ...], bool, int]] = field(default_factory=set)  # commands found harmless

    def line(self, text: str, depth: int) -> str | None:
        analysis = analysed(text)
        if analysis.tree is None or (analysis.unreadable and depth == 0):
            return f"nami cannot read it ({analysis.syntax})"
        # Top-down, carrying whether a node's input may come from the line (a pipe before it, an input
        # redirection around it) and its parent's type: tree-sitter finds a node's parent from the root.
        stack: list[tuple[Any, bool, str]] = [(analysis.tree, False, "")]
        while stack:
            node, fed, parent = stack.pop()
            if not node.is_named:  # `;`, `|`, `$(`: tokens, read with the node they belong to
                continue
            if node.type == "command":
                fed = fed or any(_is_input(c) for c in node.children)
            why = self._node(node, fed, parent, depth)
            if why:
                return why
            children = node.children
            if node.type == "pipeline":
                first = next((i for i, c in enumerate(children) if c.is_named), 0)
                stack.extend((c, fed or i != first, node.type) for i, c in reversed(list(enumerate(children))))
            elif node.type == "process_substitution" and children and children[0].type == ">(":
                stack.extend((c, True, node.type) for c in reversed(children))  # >(cmd) reads what is written
            elif node.type == "redirected_statement":
                inner = fed or any(_is_input(c) for c in children)
                stack.extend((c, inner, node.type) for c in reversed(children))
            else:
                stack.extend((c, fed, node.type) for c in reversed(children))
        return None

    def nested(self, text: str, depth: int) -> str | None:
        """A string a command may run as a command line, read as one."""
        if depth >= MAX_DEPTH:
            return "it nests command lines deeper than deny rules read"
        self.parses -= 1
        self.chars -= len(text)
        if self.parses < 0 or self.chars < 0:
            return "it holds more command lines in its words than deny rules read"
        return self.line(text, depth + 1)

    def _node(self, node: Any, fed: bool, parent: str, depth: int) -> str | None:
        kind = node.type
        if kind == "command":
            return self._command(node, fed, depth)
        if kind == "declaration_command":
            return _declaration(node)
        if kind == "unset_command":
            if any("[" in c.text.decode("utf-8", "replace") or static_value(c) is None for c in node.named_children):
                return "`unset` evaluates an array subscript, or a name computed when the line runs"
            return None
        if kind == "variable_assignment":
            return self._assignment(node, parent, depth)
        if kind in ("arithmetic_expansion", "c_style_for_statement") or (
                kind == "compound_statement" and node.children and node.children[0].type == "(("):
            if any(n.type in _IDENTIFIERS for n in walk_tree(node) if n is not node):
                return "it evaluates arithmetic on a variable, whose value bash may run as code (`a[$(…)]`)"
            return None
        if kind == "test_command":
            return _test(node)
        if kind == "expansion":
            return _expansion(node)
        if kind == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None and variable.text.decode("utf-8", "replace") in RESOLVING:
                return f"its loop sets {variable.text.decode('utf-8', 'replace')}, which changes which program runs"
            return None
        if node.is_named and kind not in _READ and not (kind == "ERROR" and depth):
            return f"it uses a {kind.replace('_', ' ')}, which deny rules do not read"
        return None

    def _command(self, node: Any, fed: bool, depth: int) -> str | None:
        words = command_words(node)
        if (words, fed, depth) in self.cleared:  # `ls; ls; ls; …`: each the same
            return None
        why = self._commands(words, fed, depth)
        if why is None:
            self.cleared.add((words, fed, depth))
        return why

    def _commands(self, words: tuple[Word, ...], fed: bool, depth: int) -> str | None:
        why = self._words(words, fed=fed, behind=False, depth=depth)
        if why:
            return why
        for start in tail_starts(words):
            self.tail_words -= len(words) - start
            if self.tail_words < 0:
                return "it holds more commands run by other commands than deny rules read"
            why = self._words(words[start:], fed=True, behind=True, depth=depth)
            if why:
                return why
        return _filled(words)

    def _words(self, words: tuple[Word, ...], *, fed: bool, behind: bool, depth: int) -> str | None:
        """``fed``: its input may come from the line; ``behind``: it is run by another command (xargs,
        find -exec, sudo), which may fill in its words."""
        name = words[0] if words else None
        if name is None:
            return "its command name is computed when the line runs"
        if "{}" in name:
            return "a command name is filled in when the line runs (`{}`)"
        base = program_name(name)
        rest = words[1:]
        if base in SHELLS or base in SHELL_STRING or base in ("source", "."):
            why = self._shell(name, base, rest, fed=fed, behind=behind, depth=depth)
            if why:
                return why
        elif base in INTERPRETERS or base == "python":
            scripted = base in ("sed", "awk", "gawk", "mawk", "nawk")  # their input is data, their script code
            script = script_problem(words) if scripted else None
            if script:
                return f"{script}: it may run a program"
            if (fed or behind) and (not scripted or any(w == "-" or (w or "").startswith(_STDIN_PATHS)
                                                       for w in rest)):
                return f"`{name}` may read code from the line's input or from the command that runs it"
        if base in _ENV_SETTERS:
            why = self._environment(name, rest, depth)
            if why:
                return why
        problem = code_problem(words, find_runs=False)
        if problem:
            return problem
        if behind:
            return None  # its words are the runner's: read there
        if base == "exec" and not rest:
            return "`exec` changes where the commands after it read and write"
        if None in rest and not runs_nothing(name):
            return (f"`{name}` gets a word computed when the line runs, which may be an option that makes it "
                    "run a program")
        if base not in SHELL_STRING and not read_plainly(words):
            return self._words_as_lines(name, rest, depth)
        return None

    def _shell(self, name: str, base: str, rest: tuple[Word, ...], *, fed: bool, behind: bool,
               depth: int) -> str | None:
        if base in SHELLS and (fed or behind):
            return f"`{name}` may read commands from the line's input or from the command that runs it"
        if None in rest:
            return f"`{name}` runs a command line computed when the line runs"
        static = [w for w in rest if w is not None]
        if base in SHELLS or base in ("source", "."):
            if any(w.startswith(_STDIN_PATHS) for w in static):
                return f"`{name}` reads commands from its input"
            if static and static[-1].startswith("-") and "c" in static[-1][1:] and not static[-1].startswith("--"):
                return f"`{name} -c` takes its command line from what runs it"
        if base in SHELL_STRING:
            for text in dict.fromkeys([*static, " ".join(static)]):
                why = self.nested(text, depth)
                if why:
                    return f"{why} (in the command line `{name}` runs)"
        return None

    def _words_as_lines(self, name: str, rest: tuple[Word, ...], depth: int) -> str | None:
        """Words nami cannot read as inert may be command lines the program runs (an option's value
        such as `--upload-pack=…`, an operand such as sqlite3's `.shell …`): read them as command lines."""
        for word in (name, *rest):
            if word is None:
                continue  # computed: judged above
            pieces = [word]
            if "=" in word:  # --upload-pack=…, -oProxyCommand=…, alias.x=!…
                pieces.append(word.split("=", 1)[1])
            for piece in pieces:
                if _SHELL_TEXT.intersection(piece):
                    why = self.nested(piece, depth)
                    if why:
                        return f"{why} (in `{_short(word)}`, which `{name}` may run as a command line)"
        return None

    def _environment(self, name: str, rest: tuple[Word, ...], depth: int) -> str | None:
        """`env NAME=value cmd`, `sudo NAME=value cmd`: assignments as much as `NAME=value cmd` is."""
        for word in rest:
            variable, equals, value = (word or "").partition("=")
            if not equals or not _NAME.fullmatch(variable):
                continue
            if variable in RESOLVING:
                return f"`{name}` sets {variable}, which changes which program a command name runs"
            why = self._in_variable(variable, value, depth)
            if why:
                return why
        return None

    def _assignment(self, node: Any, parent: str, depth: int) -> str | None:
        target = node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None)
        if target is None:
            return None
        if target.type == "subscript":
            return ("it assigns an array element: bash evaluates the subscript as code, and BASH_CMDS[…] or "
                    "BASH_ALIASES[…] rebind a command")
        name = target.text.decode("utf-8", "replace")
        if name in RESOLVING:
            return f"it sets {name}, which changes which program a command name runs"
        exported = parent in ("command", "declaration_command")
        value = node.child_by_field_name("value")
        if not exported or value is None:
            return None  # a shell variable: where it is used, the use is read
        text = static_value(value)
        if text is None:
            return f"it gives a command the variable {name} computed when the line runs (a program may run it)"
        return self._in_variable(name, text, depth)

    def _in_variable(self, name: str, value: str, depth: int) -> str | None:
        """Why the command line a variable's value may be run as is not plain (None: it is, or it is none)."""
        if not _SHELL_TEXT.intersection(value):
            return None
        why = self.nested(value, depth)
        return f"{why} (in the variable {name}, which a program may run as a command line)" if why else None


def _filled(words: tuple[Word, ...]) -> str | None:
    """xargs adds words from its input to the command it runs, options included (`-c alias.x=…` for git),
    or is the command itself (`xargs -0 env`): unless that program runs nothing whatever its words."""
    for index, word in enumerate(words):
        if word is None:
            continue
        name = program_name(word)
        if name == "parallel":
            return "`parallel` builds its commands from its input"
        if name != "xargs":
            continue
        command = index + 1
        while command < len(words) and (words[command] or "").startswith("-"):
            option = words[command] or ""
            command += 2 if option in _XARGS_VALUED else 1
        if command >= len(words):
            return None  # xargs alone runs echo
        program = words[command]
        if program is None or not runs_nothing(program):
            return f"`{program or '…'}` runs behind `xargs`, which adds words from its input (options included)"
        return None
    return None


def _declaration(node: Any) -> str | None:
    keyword = node.children[0].type if node.children else ""
    if keyword in ("declare", "typeset"):
        return f"`{keyword}` {CODE_BUILTINS[keyword]}"
    for child in node.named_children:
        if child.type == "variable_assignment":
            continue  # read on its own
        value = static_value(child)
        if value is None or value.startswith("-") or value in RESOLVING:
            return f"`{keyword}` {CODE_BUILTINS.get(keyword, 'sets variables')}"
    return None


def _test(node: Any) -> str | None:
    operators = {n.text.decode("utf-8", "replace") for n in walk_tree(node) if n.type == "test_operator"}
    if operators & {"-v", "-R"}:
        return "a test -v evaluates an array subscript, in which bash runs `$(…)`"
    if node.children and node.children[0].type == "[[" and operators & _ARITHMETIC_TESTS:
        return "[[ … -eq … ]] evaluates both sides as arithmetic, in which bash runs `$(…)`"
    return None


def _expansion(node: Any) -> str | None:
    kinds = [c.type for c in node.children]
    if len(kinds) > 1 and kinds[1] == "!":
        return "an indirect expansion ${!…} evaluates the name it finds, subscripts included"
    if any(k in (":=", "=", ":") for k in kinds):
        return "an expansion assigns a variable or evaluates an offset as arithmetic"
    if "@" in kinds:  # ${x@P} expands the value as a prompt: `$(…)` in it runs
        return "a ${…@…} transformation expands the value again (as a prompt, ${x@P}, it runs `$(…)`)"
    for child in node.children:
        if child.type == "subscript":
            index = child.child_by_field_name("index")
            text = index.text.decode("utf-8", "replace") if index is not None else ""
            if not (text.isdigit() or text in ("@", "*")):
                return "an array subscript is evaluated as arithmetic, in which bash runs `$(…)`"
    return None


def _is_input(node: Any) -> bool:
    if node.type in ("heredoc_redirect", "herestring_redirect"):
        return True
    return node.type == "file_redirect" and redirect_operator(node) in _INPUT


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:59] + "…"
