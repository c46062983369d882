"""PyYAML's syntax errors in nami's words: what is wrong on the line it stopped at, and where the block,
list or quote it was reading began ("while parsing a block mapping … did not find expected key" says
neither). An error this module does not know keeps PyYAML's text."""

from __future__ import annotations

import re

import yaml

_NAME = re.compile(r"[^\s,\[\]{}]+")


def _column_text(text: str, line: int, col: int) -> str:
    lines = text.splitlines()
    return lines[line - 1][col - 1:] if 0 < line <= len(lines) else ""


def tab_in_indentation(text: str, line: int) -> int | None:
    """The column of a tab in the indentation of ``line`` (1-based), where YAML stopped; else None.

    Only asked once parsing failed: a tab inside a block scalar (a script's heredoc) is content, not an error.
    """
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    row = lines[line - 1]
    indentation = row[: len(row) - len(row.lstrip(" \t"))]
    return indentation.index("\t") + 1 if "\t" in indentation else None


def describe(exc: yaml.MarkedYAMLError, text: str) -> tuple[int, int, str]:
    """Where the error is (1-based line and column) and what it is, for a person fixing the file."""
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    tab = tab_in_indentation(text, line)
    if tab:
        return line, tab, "tab characters are not allowed for indentation; indent with spaces"
    start = exc.context_mark
    began = f"line {start.line + 1}, column {start.column + 1}" if start is not None else "above"
    words = _in_words(exc.context or "", exc.problem or "", began, _column_text(text, line, col))
    if words is not None:
        return line, col, words
    reason = " ".join(part for part in (exc.context, exc.problem) if part)
    if exc.context and start is not None and mark is not None and start.line != mark.line:
        reason = f"{exc.context} ({began}) {exc.problem or ''}".strip()
    return line, col, reason


def _in_words(context: str, problem: str, began: str, here: str) -> str | None:
    if "block mapping" in context and ("expected key" in problem or "expected <block end>" in problem):
        if here.startswith("-"):
            return (f"a list item inside a mapping (which starts at {began}): a list belongs under a key, "
                    "`key:` on the line above and the items indented below it")
        return (f"bad indentation: this line lines up with no key of the mapping it is in (which starts at "
                f"{began}); indent it with exactly as many spaces as the keys it belongs with")
    if "block collection" in context and "'-' indicator" in problem:
        return (f"the list that starts at {began} goes on with a line that is not an item: start it with '- ', "
                "or indent it to belong to the item above")
    if "flow sequence" in context:
        return f"the list opened with '[' at {began} is not closed: a ']' is missing, or a ',' between two items"
    if "flow mapping" in context:
        return (f"the mapping opened with '{{' at {began} is not closed: a '}}' is missing, or a ',' between "
                "two entries")
    if "quoted scalar" in context and "end of stream" in problem:
        return f"the quoted text opened at {began} never ends: its closing quote is missing"
    if "unknown escape character" in problem:
        escape = here[:2] if here.startswith("\\") else "this"
        return (f"'{escape}' is not an escape YAML knows inside double quotes: double the backslash ('\\\\'), "
                "or use single quotes, inside which a backslash is just a backslash")
    if "mapping values are not allowed" in problem:
        return ("a ': ' here cannot start a key: quote a value that holds ': ' (\"a: b\"), or start a new key "
                "at the indentation of the keys above it")
    if "simple key" in context and "expected ':'" in problem:
        return "this line is neither `key: value` nor a list item: a ':' after the key is missing"
    if "undefined alias" in problem:
        name = _NAME.match(here[1:]) if here.startswith("*") else None
        alias = name.group(0) if name else "NAME"
        return f"*{alias} refers to no anchor &{alias} defined above it (quote a value starting with '*')"
    if "expected the node content" in problem or "expected <block end>" in problem:
        return f"a value was expected here, not {here[:1]!r}" if here else "a value was expected here"
    return None
