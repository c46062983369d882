"""Conditions on one argument value, as written under a rule's ``args:``.

A value may be read more than one way: an array argument is each of its elements, and a ``{path: …}``
pattern sees a path both as written (normalised) and as the file system resolves it (symlinks followed).
An allow rule needs every reading to match (so ``src/../.env`` or a
symlink out of ``src/`` is not "in src/"); a deny or ask rule needs only one (so any spelling of ``.env``
is caught). Where a combination cannot be exact (alternatives seeing different readings), it errs toward
not allowing and toward denying.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.builtins.glob_match import glob_regex
from nami_yaml.registry.patterns import end_anchored

SCALARS = (str, int, float, bool, type(None))


class MatcherError(ValueError):
    """A condition that cannot be used (a regex that does not compile); ``path`` says where inside it."""

    def __init__(self, message: str, path: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.path = path


class Matcher:
    def holds(self, value: Any, workspace: Path, every: bool) -> bool:
        """For one (non-array) value: whether every reading matches (``every``), or one does."""
        truths = self.truths(value, workspace)
        return all(truths) if every else any(truths)

    def truths(self, value: Any, workspace: Path) -> list[bool]:
        """One truth per reading of the value."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


@dataclass(frozen=True)
class Exact(Matcher):
    expected: Any

    def truths(self, value: Any, workspace: Path) -> list[bool]:
        return [same_value(value, self.expected)]

    def describe(self) -> str:
        return f"is {_short(self.expected)}"


@dataclass(frozen=True)
class AnyOf(Matcher):
    options: tuple[Matcher, ...]

    def holds(self, value: Any, workspace: Path, every: bool) -> bool:
        # With ``every``, one option must match every reading: a symlink from src/ into docs/ is neither.
        return any(option.holds(value, workspace, every) for option in self.options)

    def describe(self) -> str:
        if all(isinstance(o, Exact) for o in self.options):
            return "is one of " + ", ".join(_short(o.expected) for o in self.options)  # type: ignore[attr-defined]
        return " or ".join(o.describe() for o in self.options)


@dataclass(frozen=True)
class Glob(Matcher):
    pattern: str

    def truths(self, value: Any, workspace: Path) -> list[bool]:
        return [isinstance(value, str) and fnmatch.fnmatchcase(value, self.pattern)]

    def describe(self) -> str:
        return f"matches {self.pattern!r}"


@dataclass(frozen=True)
class Regex(Matcher):
    source: str
    compiled: re.Pattern[str]
    at_end: re.Pattern[str]  # ``$`` meaning the end of the text, as in the tools' JSON Schema patterns

    @classmethod
    def build(cls, source: str) -> Regex:
        try:
            return cls(source, re.compile(source), re.compile(end_anchored(source)))
        except re.error as exc:
            raise MatcherError(f"regex {source!r} does not compile: {exc}", ("regex",)) from None

    def truths(self, value: Any, workspace: Path) -> list[bool]:
        if not isinstance(value, str):
            return [False]
        return [bool(self.compiled.search(value)) and (not value.endswith("\n") or bool(self.at_end.search(value)))]

    def describe(self) -> str:
        return f"matches the regex {self.source!r}"


@dataclass(frozen=True)
class PathGlob(Matcher):
    """A path pattern: ``*`` and ``?`` stay within one folder, ``**`` spans folders, ``dir/**`` includes
    ``dir`` itself. A relative pattern is matched against paths inside the workspace (relative to it), or
    against the absolute path of one outside; an absolute pattern against the absolute path."""

    source: str
    regex: re.Pattern[str]
    absolute: bool
    any_case: re.Pattern[str]  # the same pattern, ignoring case

    @classmethod
    def build(cls, source: str) -> PathGlob:
        pattern = os.path.expanduser(source)
        regex = path_glob_regex(pattern.lstrip("/"))
        try:
            return cls(source, re.compile(regex, re.DOTALL), pattern.startswith("/"),
                       re.compile(regex, re.DOTALL | re.IGNORECASE))
        except re.error as exc:  # a class such as [z-a]
            raise MatcherError(f"path pattern {source!r} is not valid: {exc}", ("path",)) from None

    def truths(self, value: Any, workspace: Path) -> list[bool]:
        if not isinstance(value, str) or "\x00" in value:
            return [False]
        forms = path_readings(value, workspace)
        # On a case-insensitive file system (macOS, Windows drives) `.ENV` is `.env`: matching regardless of
        # case is one more reading, so a deny needs only it and an allow still needs the exact case.
        return [self._matches(form, workspace, regex) for regex in (self.regex, self.any_case) for form in forms]

    def _matches(self, absolute: str, workspace: Path, regex: re.Pattern[str]) -> bool:
        if self.absolute:
            return bool(regex.fullmatch(absolute.lstrip("/")))
        root = str(workspace)
        if absolute == root:
            return bool(regex.fullmatch("."))
        if absolute.startswith(root.rstrip("/") + "/"):
            return bool(regex.fullmatch(absolute[len(root.rstrip("/")) + 1:]))
        return bool(regex.fullmatch(absolute.lstrip("/")))

    def describe(self) -> str:
        return f"is a path matching {self.source!r}"


@dataclass(frozen=True)
class Not(Matcher):
    inner: Matcher

    def holds(self, value: Any, workspace: Path, every: bool) -> bool:
        # Every reading fails the inner condition = none matches it; one reading fails it = not all match.
        return not self.inner.holds(value, workspace, not every)

    def describe(self) -> str:
        return f"does not satisfy ({self.inner.describe()})"


def path_readings(value: str, workspace: Path) -> list[str]:
    """The path as written (``..`` and ``.`` applied) and as the file system resolves it, both absolute.
    ``~`` is not expanded: the file tools do not expand it either."""
    joined = value if os.path.isabs(value) else os.path.join(workspace, value)
    lexical = os.path.normpath(joined)
    resolved = os.path.realpath(joined)
    return [lexical] if resolved == lexical else [lexical, resolved]


def path_glob_regex(pattern: str) -> str:
    """The glob language of grep and glob (``**``, ``*``, ``?``, ``[…]``, ``{a,b}``), with ``dir/**``
    also matching ``dir`` itself."""
    if pattern.endswith("/**"):
        return glob_regex(pattern[:-3]) + "(?:/.*)?"
    return glob_regex(pattern)


def compile_matcher(spec: Any) -> Matcher:
    """A matcher from the YAML value (already schema-checked); MatcherError for a bad regex."""
    if isinstance(spec, list):
        options = []
        for index, item in enumerate(spec):
            try:
                options.append(compile_matcher(item))
            except MatcherError as exc:
                raise MatcherError(str(exc), (index, *exc.path)) from None
        return AnyOf(tuple(options))
    if isinstance(spec, dict):
        [(kind, argument)] = spec.items()
        if kind == "glob":
            return Glob(argument)
        if kind == "path":
            return PathGlob.build(argument)
        if kind == "regex":
            return Regex.build(argument)
        try:
            return Not(compile_matcher(argument))
        except MatcherError as exc:
            raise MatcherError(str(exc), ("not", *exc.path)) from None
    return Exact(spec)


def condition_holds(matcher: Matcher, value: Any, workspace: Path, *, every_reading: bool) -> bool:
    """Whether the condition holds for ``value``: for every reading (allow) or for one (deny, ask). An
    array is read as its elements; an empty array matches nothing."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return False
    results = (matcher.holds(item, workspace, every_reading) for item in items)
    return all(results) if every_reading else any(results)


def _short(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"

