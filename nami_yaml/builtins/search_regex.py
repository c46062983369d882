"""grep's pattern, read as Python ``re`` reads it (compile_regex) and rewritten in ripgrep's syntax so that
it means the same there (rg_regex).

rg searches everything, one named file included, with the rewritten pattern. Constructs only a backtracking
engine can run (look-around, backreferences, conditionals, atomic groups, possessive quantifiers) are
refused here for both engines: rg has no backtracking, and a catastrophic backtrack in ``re`` holds the GIL.
"""

from __future__ import annotations

import re
import warnings

from nami_yaml.errors import ToolError

try:  # the parser behind re.compile: its tree is exactly how Python reads a pattern
    from re import _parser as _sre_parse
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]


def compile_regex(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        # "[[:alpha:]]" and the like: Python reads them its own way (a set, then "]"), and so does rg_regex.
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None


# ---------------------------------------------------------------- the pattern in ripgrep's syntax

# What ripgrep's engine cannot run (it never backtracks); refused on both engines, so they agree and the
# model can rewrite the pattern.
_BACKTRACKING_ONLY = {
    "ASSERT": "look-ahead ((?=...), (?!...))",  # "look-behind" when it looks back, see _rg_node
    "ASSERT_NOT": "look-ahead ((?=...), (?!...))",
    "GROUPREF": "backreferences (\\1, (?P=name))",
    "GROUPREF_EXISTS": "conditional groups ((?(1)yes|no))",
    "ATOMIC_GROUP": "atomic groups ((?>...))",
    "POSSESSIVE_REPEAT": "possessive quantifiers (*+, ++, ?+, {m,n}+)",
}
_NEVER = r"\b\B"  # matches nowhere (rg refuses an empty class): what a "\n" in a pattern meets in a line
_MAXREPEAT = getattr(_sre_parse, "MAXREPEAT", 4294967295)
# Python's Unicode classes, as class items: \w is str.isalnum() or "_", \s is str.isspace() (rg's \s
# lacks U+001C-U+001F); \d is Unicode Nd in both. With (?a) they are the ASCII sets.
_CLASSES = {
    "CATEGORY_DIGIT": (r"\d", "0-9"),
    "CATEGORY_SPACE": (r"\s\x{1c}-\x{1f}", r"\x{9}-\x{d}\x{20}"),
    "CATEGORY_WORD": (r"\p{L}\p{N}_", "0-9A-Za-z_"),
}


def rg_regex(pattern: str) -> str:
    """``pattern``, valid Python ``re`` syntax, rewritten for ripgrep so that it means what Python reads.

    Built from Python's own parse tree, so rg never reads a pattern differently ("[[:alpha:]]", "\\<",
    "{,2}", "\\Z", ...). Every character that is not an ASCII letter or digit becomes ``\\x{..}``. Constructs
    rg cannot run raise a ToolError naming the construct. Lines never hold a "\\n", so a literal newline
    matches nowhere, as in Python.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            tree = _sre_parse.parse(pattern, 0)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    flags = tree.state.flags
    body = _rg_sequence(list(tree), ascii=bool(flags & re.ASCII))
    return ("(?i)" if flags & re.IGNORECASE else "") + body


def _rg_sequence(items: list[tuple[object, object]], *, ascii: bool) -> str:
    return "".join(_rg_node(op, av, ascii=ascii) for op, av in items)


def _rg_node(op: object, av: object, *, ascii: bool) -> str:
    name = getattr(op, "name", str(op))
    if name in _BACKTRACKING_ONLY:
        construct = _BACKTRACKING_ONLY[name]
        if name in ("ASSERT", "ASSERT_NOT") and av[0] < 0:  # type: ignore[index]
            construct = "look-behind ((?<=...), (?<!...))"
        raise ToolError(f"grep does not support {construct}: patterns are limited to what "
                        "ripgrep's engine runs, which never backtracks. Rewrite the pattern without it (match "
                        "the wider text, or grep the results again)")
    if name == "LITERAL":
        return _rg_char(av) or _NEVER  # type: ignore[arg-type]
    if name == "NOT_LITERAL":
        char = _rg_char(av)  # type: ignore[arg-type]
        return f"[^{char}]" if char else "."  # "[^\n]": any character of a line
    if name == "ANY":
        return "."
    if name == "IN":
        return _rg_class(av, ascii=ascii)  # type: ignore[arg-type]
    if name == "AT":
        return _rg_anchor(getattr(av, "name", str(av)), ascii=ascii)
    if name == "BRANCH":
        _, alternatives = av  # type: ignore[misc]
        return "(?:" + "|".join(_rg_sequence(list(alt), ascii=ascii) for alt in alternatives) + ")"
    if name == "SUBPATTERN":
        _group, add, remove, sub = av  # type: ignore[misc]
        inner_ascii = (ascii or bool(add & re.ASCII)) and not add & re.UNICODE
        switch = ("i" if add & re.IGNORECASE else "") + ("-i" if remove & re.IGNORECASE else "")
        return f"(?{switch}:{_rg_sequence(list(sub), ascii=inner_ascii)})"
    if name in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, sub = av  # type: ignore[misc]
        count = f"{{{low},}}" if high == _MAXREPEAT else f"{{{low},{high}}}"
        lazy = "?" if name == "MIN_REPEAT" else ""
        return f"(?:{_rg_sequence(list(sub), ascii=ascii)}){count}{lazy}"
    raise ToolError(f"grep cannot run this pattern: it uses a construct ({name}) it does not know")


def _rg_char(code: int) -> str:
    """One character for rg: letters and digits as they are, the rest escaped; "" for what no line holds
    (a newline, a lone surrogate)."""
    if code == 10 or 0xD800 <= code <= 0xDFFF:
        return ""
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{{{code:x}}}"


def _rg_class(items: list[tuple[object, object]], *, ascii: bool) -> str:
    negate = False
    parts: list[str] = []
    for op, av in items:
        name = getattr(op, "name", str(op))
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            parts.append(_rg_char(av))  # type: ignore[arg-type]
        elif name == "RANGE":
            low, high = av  # type: ignore[misc]
            low = 0xE000 if 0xD800 <= low <= 0xDFFF else low  # rg's ranges hold no surrogates
            high = 0xD7FF if 0xD800 <= high <= 0xDFFF else high
            if low == high:
                parts.append(_rg_char(low))
            elif low < high:
                parts.append(f"\\x{{{low:x}}}-\\x{{{high:x}}}")
        elif name == "CATEGORY":
            parts.append(_rg_category(getattr(av, "name", str(av)), ascii=ascii))
        else:
            raise ToolError(f"grep cannot run this pattern: it uses a construct ({name}) it does not know")
    body = "".join(parts)
    if not body:  # only what no line holds: nothing matches, or (negated) anything does
        return "." if negate else _NEVER
    return f"[{'^' if negate else ''}{body}]"


def _rg_category(name: str, *, ascii: bool) -> str:
    negated = name.startswith("CATEGORY_NOT_")
    key = name.replace("CATEGORY_NOT_", "CATEGORY_")
    if key not in _CLASSES:
        raise ToolError(f"grep cannot run this pattern: it uses a class ({name}) it does not know")
    unicode_items, ascii_items = _CLASSES[key]
    items = ascii_items if ascii else unicode_items
    return f"[^{items}]" if negated else items


def _rg_anchor(name: str, *, ascii: bool) -> str:
    # One line at a time: the start and end of the string are the start and end of the line.
    anchors = {"AT_BEGINNING": "^", "AT_BEGINNING_LINE": "^", "AT_BEGINNING_STRING": r"\A",
               "AT_END": "$", "AT_END_LINE": "$", "AT_END_STRING": r"\z",
               "AT_BOUNDARY": r"\b", "AT_NON_BOUNDARY": r"\B"}
    if name not in anchors:
        raise ToolError(f"grep cannot run this pattern: it uses an anchor ({name}) it does not know")
    anchor = anchors[name]
    return f"(?-u:{anchor})" if ascii and name in ("AT_BOUNDARY", "AT_NON_BOUNDARY") else anchor
