"""Glob patterns matched in time proportional to the path, whoever wrote the pattern.

The model writes the patterns of glob and grep, and a cloned repository writes its .gitignore, which
every walk applies. As one backtracking regex, `*a*a*a*a*a*a*a*a*a*a*b` against a file name of 100
`a`s ran for hours inside nami (a regex match does not even see Ctrl-C), and so did `{a,a}` repeated.
So braces are expanded into alternatives (at most ``MAX_ALTERNATIVES``), an alternative with at most
two wildcards that span text (``*``, ``**``) is a regex (its backtracking is at most quadratic), and one
with more is matched by walking all its possible positions at once, one character at a time.

The language is grep's and glob's: ``**/`` spans folders (or none), ``**`` anything, ``*`` and ``?``
stay within a folder, ``[abc]`` and ``[!abc]`` are classes, ``{a,b}`` alternatives, ``\\x`` a literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import product

from nami_yaml.errors import ToolError

MAX_ALTERNATIVES = 256  # of a pattern's braces, multiplied out
MAX_REGEX_WILDCARDS = 2  # more wildcards that span text are matched without backtracking

Token = tuple  # ("lit", char) | ("one",) | ("class", regex) | ("star",) | ("any",) | ("dirs",) | ("alt", [tokens])
_SPANNING = ("star", "any", "dirs")
_REGEX = {"one": "[^/]", "star": "[^/]*", "any": ".*", "dirs": "(?:.*/)?"}


def tokens(pattern: str) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append(("dirs",))
            i += 3
        elif pattern.startswith("**", i):
            out.append(("any",))
            i += 2
        elif c == "\\" and i + 1 < n:
            out.append(("lit", pattern[i + 1]))  # an escaped character is literal, as in git and rg
            i += 2
        elif c == "*":
            out.append(("star",))
            i += 1
        elif c == "?":
            out.append(("one",))
            i += 1
        elif c == "[" and pattern.find("]", i + 2) != -1:
            end = pattern.find("]", i + 2)
            body = pattern[i + 1:end]
            negate = body.startswith(("!", "^"))
            body = re.sub(r"([\\^\[\]])", r"\\\1", body[1:] if negate else body)
            # A negated class never matches the folder separator, just like * and ?.
            out.append(("class", ("[^/" if negate else "[") + body + "]"))
            i = end + 1
        elif c == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            out.append(("alt", [tokens(alt) for alt in pattern[i + 1:end].split(",")]))
            i = end + 1
        else:
            out.append(("lit", c))
            i += 1
    return out


def glob_regex(pattern: str) -> str:
    """The pattern as one regex (braces as alternation), for patterns an author wrote: rules' paths."""
    return _regex(tokens(pattern))


def _regex(toks: list[Token]) -> str:
    parts = []
    for token in toks:
        kind = token[0]
        if kind == "lit":
            parts.append(re.escape(token[1]))
        elif kind == "class":
            parts.append(token[1])
        elif kind == "alt":
            parts.append("(?:" + "|".join(_regex(alt) for alt in token[1]) + ")")
        else:
            parts.append(_REGEX[kind])
    return "".join(parts)


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a whole text matches ``pattern``; ToolError when its braces make too many alternatives or
    a class is not valid."""
    alternatives = _expand(tokens(pattern), pattern)
    try:
        matchers = [_matcher(alt) for alt in alternatives]
    except re.error as exc:  # a class such as [z-a]
        raise ToolError(f"glob pattern {pattern!r} is not valid: {exc}") from None
    if len(matchers) == 1:
        return matchers[0]
    return lambda text: any(match(text) for match in matchers)


def _expand(toks: list[Token], pattern: str) -> list[list[Token]]:
    """The brace-free token lists a pattern stands for."""
    choices: list[list[list[Token]]] = []
    count = 1
    for token in toks:
        if token[0] == "alt":
            options = [flat for alt in token[1] for flat in _expand(alt, pattern)]
        else:
            options = [[token]]
        count *= len(options)
        if count > MAX_ALTERNATIVES:
            raise ToolError(f"glob pattern {pattern!r} has more than {MAX_ALTERNATIVES} alternatives: "
                            "use fewer {a,b} groups")
        choices.append(options)
    return [[token for part in combination for token in part] for combination in product(*choices)]


def _matcher(toks: list[Token]) -> Callable[[str], bool]:
    if sum(token[0] in _SPANNING for token in toks) <= MAX_REGEX_WILDCARDS:
        rx = re.compile(_regex(toks) + r"\Z", re.DOTALL)
        return lambda text: rx.match(text) is not None
    return _Positions(toks).fullmatch


class _Positions:
    """Every position in the pattern the text so far can have reached (a position inside ``**/`` is
    its own state: it may end only at a separator), advanced one character at a time."""

    def __init__(self, toks: list[Token]):
        self.toks = toks
        self.classes = {i: re.compile(token[1]) for i, token in enumerate(toks) if token[0] == "class"}

    def _closed(self, states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
        """With the positions reached by letting wildcards match nothing."""
        stack = list(states)
        while stack:
            index, inside = stack.pop()
            if not inside and index < len(self.toks) and self.toks[index][0] in _SPANNING:
                following = (index + 1, False)
                if following not in states:
                    states.add(following)
                    stack.append(following)
        return states

    def fullmatch(self, text: str) -> bool:
        toks, end = self.toks, len(self.toks)
        states = self._closed({(0, False)})
        for char in text:
            reached: set[tuple[int, bool]] = set()
            for index, _inside in states:
                if index == end:
                    continue
                kind = toks[index][0]
                if kind == "lit":
                    if char == toks[index][1]:
                        reached.add((index + 1, False))
                elif kind == "one":
                    if char != "/":
                        reached.add((index + 1, False))
                elif kind == "class":
                    if self.classes[index].fullmatch(char):
                        reached.add((index + 1, False))
                elif kind == "star":
                    if char != "/":
                        reached.add((index, False))
                elif kind == "any":
                    reached.add((index, False))
                else:  # dirs: anything, ending with a separator
                    reached.add((index, True))
                    if char == "/":
                        reached.add((index + 1, False))
            if not reached:
                return False
            states = self._closed(reached)
        return (end, False) in states
