"""Whether a command of literal words is *plainly what it says*: each word read with the program's entry in
``inert_options.py`` as an inert option, an option's value, or an operand that is not code.

A program nami has no entry for is plain only in its operands (words that start with neither ``-`` nor
``+``): options are where programs keep their "run this" switches (``--pre``, ``-exec``, ``-P``,
``--to-command``), and nami cannot know an unknown program's. An allow rule's prefix vouches for the words
it names: ``not_plain(words, named)`` only judges the words from index ``named`` on.

The operand that is code for the program is read by a small reader of its own: a sed script is plain when
every command in it is one of a few that print or move text (no ``e``, ``w``, ``r``, ``s///e``…), an awk
program when it has no pipe, no output redirection, no ``system``, ``getline`` or ``@``-directive.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from nami_yaml.shell.command_risks import program_name
from nami_yaml.shell.inert_options import PYTHON_MODULES, PYTHON_OPTIONS, TABLE, Option, Program
from nami_yaml.shell.scripts import inert_awk, inert_sed


@dataclass(frozen=True)
class Part:
    index: int  # of the word in the command
    why: str | None = None  # why the word is not inert; None when it is
    script: bool = False  # the word is the program's script (sed, awk)


def not_plain(words: tuple[str | None, ...], named: int = 1) -> str | None:
    """Why the command is not plainly what it says from word ``named`` on (the words before it are vouched
    for by a rule's prefix), or None when it is."""
    if any(w is None for w in words):
        return "a word is computed"
    parts, _ = read(words)  # type: ignore[arg-type]
    return next((p.why for p in parts if p.index >= named and p.why), None)


@lru_cache(maxsize=4096)
def read_plainly(words: tuple[str | None, ...]) -> bool:
    """The whole command is read by a table entry, and every word of it is inert."""
    if not words or any(w is None for w in words):
        return False
    parts, known = read(words)  # type: ignore[arg-type]
    return known and not any(p.why for p in parts)


def script_problem(words: tuple[str | None, ...]) -> str | None:
    """Why the sed script or awk program of this command is not inert, or None."""
    if not words or any(w is None for w in words):
        return None
    parts, _ = read(words)  # type: ignore[arg-type]
    return next((p.why for p in parts if p.script and p.why), None)


def runs_nothing(name: str | None) -> bool:
    """Whatever its words, this program runs no other program (so computed words cannot make it run one)."""
    entry = TABLE.get(name) if name is not None and "/" not in name else None
    return entry is not None and entry.runs_nothing


def read(words: tuple[str, ...]) -> tuple[list[Part], bool]:
    """Each word's reading, and whether a table entry read the whole command."""
    name = words[0]
    if "/" in name:  # ./ls, /tmp/x/ls: a file, not the program of that name
        return _unknown(words, 1, name), False
    if program_name(name) == "python":
        return _python(words)
    entry = TABLE.get(name)
    if entry is None:
        return _unknown(words, 1, name), False
    if name == "tar" and len(words) > 1 and words[1] and not words[1].startswith("-"):
        return _old_style_tar(words, entry)
    return _Reader(words, name).read(entry, 1)


def _unknown(words: tuple[str, ...], start: int, label: str) -> list[Part]:
    return [Part(i, _not_inert(w, label) if _option_like(w, plus_operands=False) else None)
            for i, w in enumerate(words[start:], start)]


def _not_inert(word: str, label: str) -> str:
    return f"`{word}` is not an option nami knows to be inert for {label}"


def _option_like(word: str, *, plus_operands: bool) -> bool:
    return (word.startswith("-") and word != "-") or (word.startswith("+") and not plus_operands)


def _python(words: tuple[str, ...]) -> tuple[list[Part], bool]:
    """``python -m pytest …`` is pytest, after python's own inert options."""
    index = 1
    while index < len(words) and words[index] != "-m":
        option = PYTHON_OPTIONS.get(words[index])
        if option is None or not option.inert:
            return _unknown(words, 1, words[0]), False
        index += 1
    if index + 1 < len(words) and words[index + 1] in PYTHON_MODULES:
        parts = [Part(i) for i in range(1, index + 2)]
        more, known = _Reader(words, f"{words[0]} -m {words[index + 1]}").read(PYTHON_MODULES[words[index + 1]],
                                                                            index + 2)
        return parts + more, known
    return _unknown(words, 1, words[0]), False


def _old_style_tar(words: tuple[str, ...], entry: Program) -> tuple[list[Part], bool]:
    """``tar tvf a.tar``: the first word is short options without a dash; valued ones take the next words."""
    parts = []
    index = 2
    for letter in words[1]:
        option = entry.options.get("-" + letter)
        if option is None or not option.inert:
            parts.append(Part(1, f"`{letter}` in `{words[1]}` is not an option nami knows to be inert for tar"))
            return parts + _unknown(words, 2, "tar"), False
        for _ in range(max(option.values, 0)):
            if index < len(words):
                parts.append(Part(index, _tar_value("-" + letter, words[index], words)))
                index += 1
    more, known = _Reader(words, "tar").read(entry, index)
    return [Part(1), *parts, *more], known


def _tar_value(option: str, value: str, words: tuple[str, ...]) -> str | None:
    if option in ("-f", "--file") and ":" in value and "--force-local" not in words:
        return f"`{value}` names an archive on another host, which tar reaches by running rsh"
    return None


class _Reader:
    def __init__(self, words: tuple[str, ...], label: str):
        self.words = words
        self.label = label
        self.parts: list[Part] = []
        self.script_given = False  # a sed -e / awk -f: no operand is the script
        self.operands: list[int] = []

    def read(self, entry: Program, start: int) -> tuple[list[Part], bool]:
        words, index = self.words, start
        options_done = False
        while index < len(words):
            word = words[index]
            if not options_done and word == "--" and entry.double_dash:
                self.parts.append(Part(index))
                options_done = True
                index += 1
            elif not options_done and _option_like(word, plus_operands=entry.plus_operands):
                index = self._option(entry, index)
            elif entry.subcommands and not self.operands:
                sub = entry.subcommands.get(word)
                if sub is None and entry.operands == "none":  # git remote add: not one nami knows
                    self.parts.append(Part(index, f"`{word}` is not a sub-command nami knows to be inert for "
                                                  f"{self.label}"))
                    return self.parts, True
                self.parts.append(Part(index))
                self.label = f"{self.label} {word}"
                if sub is None:  # git push: allowed by a rule for git in its operands only
                    return self.parts + _unknown(words, index + 1, self.label), False
                return self.read(sub, index + 1)
            else:
                why = f"`{word}` is not an operand nami knows to be inert for {self.label}" \
                    if entry.operands == "none" else None
                self.parts.append(Part(index, why))
                self.operands.append(index)
                options_done = options_done or entry.options_end_at_operand
                index += 1
        if entry.operands in ("sed", "awk") and not self.script_given and self.operands:
            first = self.operands[0]
            self._script(entry, first, words[first], replace=True)
        return self.parts, True

    def _option(self, entry: Program, index: int) -> int:
        word = self.words[index]
        if word.startswith("+"):
            self.parts.append(Part(index, _not_inert(word, self.label)))
            return index + 1
        if entry.cluster and not word.startswith("--"):
            if entry.numeric and word[1:].isdigit():
                self.parts.append(Part(index))
                return index + 1
            return self._cluster(entry, index)
        name, equals, value = word.partition("=") if word.startswith("--") else (word, "", "")
        option = entry.options.get(name)
        if option is None or (equals and option.values == 0):
            self.parts.append(Part(index, _not_inert(word, self.label)))
            return index + 1
        self.parts.append(Part(index, None if option.inert else _not_inert(name, self.label)))
        if equals:
            self._value(entry, name, index, value)
            return index + 1
        return self._values(entry, name, option, index + 1)

    def _cluster(self, entry: Program, index: int) -> int:
        word = self.words[index]
        for position in range(1, len(word)):
            name = "-" + word[position]
            option = entry.options.get(name)
            if option is None:
                self.parts.append(Part(index, _not_inert(word, self.label)))
                return index + 1
            if not option.inert:
                self.parts.append(Part(index, _not_inert(name, self.label)))
            if option.values != 0:
                rest = word[position + 1:]
                if rest:
                    self._value(entry, name, index, rest.removeprefix("=") if position == 1 else rest)
                    self.parts.append(Part(index))
                    return index + 1
                self.parts.append(Part(index))
                return self._values(entry, name, option, index + 1)
        self.parts.append(Part(index))
        return index + 1

    def _values(self, entry: Program, name: str, option: Option, index: int) -> int:
        for _ in range(max(option.values, 0)):
            if index < len(self.words):
                self._value(entry, name, index, self.words[index])
                index += 1
        return index

    def _value(self, entry: Program, name: str, index: int, value: str) -> None:
        if name in entry.code_options:
            self._script(entry, index, value, replace=False)
        elif name in entry.code_files:
            self.script_given = True
        else:
            self.parts.append(Part(index, _tar_value(name, value, self.words) if self.label == "tar" else None))

    def _script(self, entry: Program, index: int, script: str, *, replace: bool) -> None:
        self.script_given = True
        inert = inert_sed(script) if entry.operands == "sed" else inert_awk(script)
        kind = "sed script" if entry.operands == "sed" else "awk program"
        part = Part(index, None if inert else f"the {kind} `{script}` is not one nami reads as inert", script=True)
        if replace:
            self.parts = [part if p.index == index and p.why is None else p for p in self.parts]
        else:
            self.parts.append(part)
