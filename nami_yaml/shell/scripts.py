"""Readers for the operand that is code for its program: a sed script, an awk program. Each accepts only
a language subset that cannot run a program or write a file, and refuses whatever it cannot follow."""

from __future__ import annotations

import re

_AWK_RUNS = re.compile(r"[|>@]|\b(system|getline)\b")


def inert_awk(program: str) -> bool:
    """No way for the program to run a command or touch a file other than its input: awk runs commands only
    with system(), pipes (`print | "cmd"`, `"cmd" | getline`) and gawk's @-directives, and writes only
    with `>` and `>>`. (A comparison with `>` is refused too: better asked than misread.)"""
    return _AWK_RUNS.search(program) is None


_SED_PLAIN = frozenset("pPdDnNgGhHxzF={}=")
_SED_FLAGS = frozenset("gpiImM0123456789")
_LABEL = re.compile(r"[A-Za-z0-9_]*")


def inert_sed(script: str) -> bool:
    """Every command of the sed script is one that prints, deletes or moves text: no `e`, `w`, `W`, `r`,
    `R`, `a`, `i`, `c`, `v`, no `s` flag but g, p, i, I, m, M and a count. Anything this reader cannot
    follow (a backslash or newline inside a bracket expression, an odd delimiter) is not inert."""
    try:
        return _Sed(script).commands()
    except IndexError:  # ran past the end: unterminated
        return False


class _Sed:
    def __init__(self, script: str):
        self.s = script
        self.i = 0

    def commands(self) -> bool:
        s = self.s
        while True:
            while self.i < len(s) and s[self.i] in " \t\n;":
                self.i += 1
            if self.i >= len(s):
                return True
            if not self._address():
                return False
            self._blanks()
            if self.i < len(s) and s[self.i] == ",":
                self.i += 1
                self._blanks()
                if s[self.i] in "+~":
                    self.i += 1
                    if not self._digits():
                        return False
                elif not self._address(required=True):
                    return False
            self._blanks()
            while self.i < len(s) and s[self.i] == "!":
                self.i += 1
                self._blanks()
            if not self._command():
                return False
            self._blanks()
            if self.i < len(s) and s[self.i] not in ";\n}#":
                return False

    def _blanks(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def _digits(self) -> bool:
        start = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        return self.i > start

    def _address(self, *, required: bool = False) -> bool:
        s = self.s
        if self.i >= len(s):
            return not required
        char = s[self.i]
        if char.isdigit():
            self._digits()
            if self.i < len(s) and s[self.i] == "~":
                self.i += 1
                return self._digits()
            return True
        if char == "$":
            self.i += 1
            return True
        if char in "/\\":
            if char == "\\":
                self.i += 1
            delimiter = s[self.i]
            if delimiter in "\\\n":
                return False
            self.i += 1
            if not self._part(delimiter, brackets=True):
                return False
            while self.i < len(s) and s[self.i] in "IM":
                self.i += 1
            return True
        return not required

    def _command(self) -> bool:
        s = self.s
        char = s[self.i]
        self.i += 1
        if char in _SED_PLAIN:
            return True
        if char in "qQlL":
            self._blanks()
            self._digits()
            return True
        if char == ":":
            label = _LABEL.match(s, self.i)
            assert label is not None
            self.i = label.end()
            return bool(label.group())
        if char in "btT":
            self._blanks()
            label = _LABEL.match(s, self.i)
            assert label is not None
            self.i = label.end()
            return True
        if char == "#":
            while self.i < len(s) and s[self.i] != "\n":
                self.i += 1
            return True
        if char in "sy":
            delimiter = s[self.i]
            if delimiter in "\\\n ;#{}":
                return False
            self.i += 1
            if not self._part(delimiter, brackets=char == "s") or not self._part(delimiter, brackets=False):
                return False
            while char == "s" and self.i < len(s) and s[self.i] in _SED_FLAGS:
                self.i += 1
            return True
        return False

    def _part(self, delimiter: str, *, brackets: bool) -> bool:
        """A regex (with bracket expressions, in which the delimiter is literal) or a replacement, up to the
        unescaped delimiter."""
        s = self.s
        while True:
            char = s[self.i]
            if char == "\\":
                self.i += 2
            elif char == "\n" and brackets:
                return False
            elif char == "[" and brackets:
                end = self._bracket()
                if end is None:
                    return False
                self.i = end
            elif char == delimiter:
                self.i += 1
                return True
            else:
                self.i += 1

    def _bracket(self) -> int | None:
        s = self.s
        j = self.i + 1
        if j < len(s) and s[j] == "^":
            j += 1
        if j < len(s) and s[j] == "]":
            j += 1
        while j < len(s) and s[j] != "]":
            if s[j] in "\\\n":
                return None
            if s[j] == "[" and j + 1 < len(s) and s[j + 1] in ":=.":
                close = s.find(s[j + 1] + "]", j + 2)
                if close < 0:
                    return None
                j = close + 2
                continue
            j += 1
        return j + 1 if j < len(s) else None
