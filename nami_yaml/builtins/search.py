"""grep and glob: search the workspace without going through bash.

ripgrep does the work when it is installed; otherwise a Python walk does. Both paths share the ignore
rules (hidden entries, node_modules, __pycache__, simple .gitignore patterns), the glob semantics and the
output format, so the model cannot tell which one ran. The Python engine is the reference: rg is told to
find a superset (no ignore sources beyond the search folder's .gitignore files, no binary quitting) and
what it finds is held to the Python rules.

Patterns are read as Python ``re`` reads them and handed to rg rewritten in its syntax (rg_regex), so rg
searches everything, one named file included. Constructs only a backtracking engine can run (look-around,
backreferences, conditionals, atomic groups, possessive quantifiers) are refused on both engines: rg has no
backtracking, and a catastrophic backtrack in ``re`` holds the GIL, which no Ctrl-C or timeout can break.
Without rg the Python engine runs in a child process (_grep_in_child) that the tool timeout and the cancel
switch kill, since even plain ``(a+)+$`` can backtrack for hours.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.builtins.workspace import display_path, is_within, resolve_path
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.process import ProcessRequest, child_environment, run_process
from nami_yaml.runtime import RuntimeContext

try:  # the parser behind re.compile: its tree is exactly how Python reads a pattern
    from re import _parser as _sre_parse
except ImportError:  # Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

GREP_MAX_MATCHES = 200
GREP_COUNT_LIMIT = 10_000  # stop counting here: the model only needs to know "too many"
GLOB_MAX_RESULTS = 500
MATCH_LINE_MAX_CHARS = 300
MAX_FILE_BYTES = 20_000_000
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
_SNIFF = 8192
_RG_OUTPUT_CAP = 4_000_000
# Longer lines are cut by rg (a preview of at least MATCH_LINE_MAX_CHARS characters stays), so a minified
# file cannot fill the output cap.
_RG_MAX_COLUMNS = 4 * MATCH_LINE_MAX_CHARS


# ---------------------------------------------------------------- glob patterns

def compile_glob(pattern: str, *, anchored: bool | None = None) -> Callable[[str], bool]:
    """A matcher for a relative POSIX path; gitignore-style: a pattern without ``/`` matches the file name
    at any depth, one with ``/`` matches the whole path from the search folder. ``**`` spans folders,
    ``*`` and ``?`` stay within one, ``[abc]`` and ``{a,b}`` work as in shells."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern or pattern.startswith("/"):
        raise ToolError(f"glob pattern {pattern!r} must be relative to the search folder (use path= for "
                        "the folder), e.g. '**/*.py' or '*.md'")
    if anchored is None:
        anchored = "/" in pattern.rstrip("/")
    rx = re.compile(_glob_regex(pattern.rstrip("/")) + r"\Z", re.DOTALL)
    if anchored:
        return lambda rel: rx.match(rel) is not None
    return lambda rel: rx.match(rel.rsplit("/", 1)[-1]) is not None


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))  # an escaped character is literal, as in git and rg
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and pattern.find("]", i + 2) != -1:
            end = pattern.find("]", i + 2)
            body = pattern[i + 1:end]
            negate = body.startswith(("!", "^"))
            body = re.sub(r"([\\^\[\]])", r"\\\1", body[1:] if negate else body)
            # A class never matches the folder separator, just like * and ?.
            out.append(("[^/" if negate else "[") + body + "]")
            i = end + 1
        elif c == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            out.append("(?:" + "|".join(_glob_regex(alt) for alt in pattern[i + 1:end].split(",")) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


# ---------------------------------------------------------------- walking (Python path)

@dataclass
class _IgnoreRule:
    base: Path
    match: Callable[[str], bool]
    dir_only: bool
    prefix: str = field(init=False, repr=False)  # base as a string ending in a separator

    def __post_init__(self) -> None:
        self.prefix = os.path.join(self.base, "")  # plain string checks: _ignored_by runs for every entry


@dataclass
class _Walk:
    root: Path
    ctx: RuntimeContext
    rules: list[_IgnoreRule] = field(default_factory=list)

    # admits(): for each folder (a string), the rules for its entries, or None if the walk skips it.
    _folders: dict[str, list[_IgnoreRule] | None] = field(default_factory=dict, init=False, repr=False)

    def _above(self) -> list[_IgnoreRule]:
        # .gitignore files above the search folder apply too, but only up to the workspace root.
        above = [p for p in reversed(self.root.parents) if is_within(p, self.ctx.workspace)]
        return [rule for folder in above for rule in _read_gitignore(folder)]

    def files(self) -> Iterator[Path]:
        """Regular files under root in path order, as ``rg --sort path`` would list them."""
        self.rules = self._above()
        yield from self._walk(self.root)

    def admits(self, file: Path) -> bool:
        """Whether files() would list ``file``, a normalised path of a regular file (as ripgrep reports
        them): the same hidden, skipped-folder and .gitignore rules, checked along its path from root."""
        full = str(file)
        folder, _, name = full.rpartition(os.sep)
        if not full.startswith(os.path.join(self.root, "")) or name.startswith("."):
            return False
        rules = self._entered(folder or os.sep)
        return rules is not None and not _ignored_by(rules, file, False)

    def _entered(self, folder: str) -> list[_IgnoreRule] | None:
        if folder not in self._folders:
            rules = None
            if folder == str(self.root):
                rules = self._above() + _read_gitignore(self.root)
            elif folder.startswith(os.path.join(self.root, "")):
                parent, _, name = folder.rpartition(os.sep)
                outer = self._entered(parent or os.sep)
                if (outer is not None and not name.startswith(".") and name not in SKIP_DIRS
                        and not _ignored_by(outer, folder, True)):
                    rules = outer + _read_gitignore(Path(folder))
            self._folders[folder] = rules
        return self._folders[folder]

    def _walk(self, folder: Path) -> Iterator[Path]:
        if self.ctx.cancel.is_set():
            raise ToolError("search interrupted")
        added = _read_gitignore(folder)
        self.rules.extend(added)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            # Symlinks are never followed: they are how a path would leave the workspace.
            if entry.is_symlink() or entry.name.startswith(".") or self._ignored(Path(entry.path), entry):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS:
                    yield from self._walk(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                yield Path(entry.path)
        del self.rules[len(self.rules) - len(added):]

    def _ignored(self, path: Path, entry: os.DirEntry[str]) -> bool:
        return _ignored_by(self.rules, path, entry.is_dir(follow_symlinks=False))


def _ignored_by(rules: list[_IgnoreRule], path: Path | str, is_dir: bool) -> bool:
    """Whether a rule ignores ``path``, an entry below the folder of each rule's .gitignore."""
    full = str(path)
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if full.startswith(rule.prefix) and rule.match(full[len(rule.prefix):].replace(os.sep, "/")):
            return True
    return False


def _read_gitignore(folder: Path) -> list[_IgnoreRule]:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    rules = []
    for line in text.splitlines():
        line = line.strip()
        # Negation ("!keep") is not supported; skipping it errs towards searching more.
        if not line or line.startswith(("#", "!")):
            continue
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        try:
            rules.append(_IgnoreRule(folder, compile_glob(line, anchored=anchored), dir_only))
        except ToolError:
            continue
    return rules


def _not_too_big(path: Path) -> bool:
    try:
        return path.stat().st_size <= MAX_FILE_BYTES
    except OSError:
        return True


def _is_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"\x00" in f.read(_SNIFF)
    except OSError:
        return True


# ---------------------------------------------------------------- grep

@dataclass
class _Found:
    lines: list[str] = field(default_factory=list)  # "path:line:text", at most GREP_MAX_MATCHES
    total: int = 0
    files: int = 0  # both engines report a file's lines together, so a new name is a new file
    incomplete: bool = False  # counting stopped early
    _last: str | None = field(default=None, repr=False)

    def add(self, shown: str, lineno: int, text: str) -> bool:
        """Record one matching line; False once counting should stop."""
        self.total += 1
        if shown != self._last:
            self.files += 1
            self._last = shown
        if len(self.lines) < GREP_MAX_MATCHES:
            text = text.rstrip("\r\n")
            if len(text) > MATCH_LINE_MAX_CHARS:
                text = text[:MATCH_LINE_MAX_CHARS] + " ..."
            self.lines.append(f"{shown}:{lineno}:{text}")
        if self.total >= GREP_COUNT_LIMIT:
            self.incomplete = True
            return False
        return True


def grep(pattern: str, path: str = ".", glob: str | None = None, *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path)
    if not target.exists():
        raise ToolError(f"path not found: {path}")
    _compile_regex(pattern)  # syntax errors read the same whichever engine runs
    rg_pattern = rg_regex(pattern)  # and so do refusals of what only a backtracking engine can run
    if glob:
        compile_glob(glob)
    rg = _ripgrep(ctx)
    if not target.is_dir() and not _searchable(target):
        found = _Found()  # too big, binary or not a regular file (a FIFO would block rg): skipped
    elif rg:
        found = _grep_rg(rg, rg_pattern, target, glob, ctx)
    else:
        found = _grep_in_child(pattern, target, glob, ctx)
    where = _where(ctx, target)
    if not found.total:
        return ToolResult(f"No matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob
                                                                      else "") + ".",
                          details={"matches": 0, "files": 0})
    count = f"{found.total:,}{'+' if found.incomplete else ''}"
    summary = f"[{count} matching lines in {found.files:,} files"
    if found.total > len(found.lines):
        summary += f"; showing the first {len(found.lines)}. Narrow the pattern, path or glob"
    return ToolResult("\n".join([*found.lines, summary + "]"]),
                      details={"matches": found.total, "files": found.files,
                               "truncated": found.total > len(found.lines)})


def _compile_regex(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        # "[[:alpha:]]" and the like: Python reads them its own way (a set, then "]"), and so does rg_regex.
        warnings.simplefilter("ignore", FutureWarning)
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None


def _searchable(file: Path) -> bool:
    """Whether grep looks inside a file named explicitly: a regular file, not over the size limit, not
    binary (rg would search it, so this is checked first)."""
    try:
        return file.is_file() and file.stat().st_size <= MAX_FILE_BYTES and not _is_binary(file)
    except OSError:
        return False


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


# ---------------------------------------------------------------- Python path (in a child process)

# The child imports this module; its folder's parent is appended so that works from a source checkout too.
# -I: no PYTHON* variables, no user site, and not the working folder (the workspace) on sys.path.
_CHILD = ("import sys; sys.path.append(sys.argv[1]); "
          "from nami_yaml.builtins.search import _grep_child_main; _grep_child_main()")
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def _grep_in_child(pattern: str, target: Path, glob: str | None, ctx: RuntimeContext) -> _Found:
    """_grep_python in a child process: a catastrophic backtrack in ``re`` never ends and holds the GIL,
    but a child is killed (with its process group) by the tool timeout or the cancel switch."""
    if not sys.executable:
        raise ToolError("grep cannot run: ripgrep (rg) is not installed and no Python interpreter is known")
    request = {"pattern": pattern, "target": str(target), "glob": glob, "workspace": str(ctx.workspace),
               "spill_dir": str(ctx.spill_dir)}
    timeout = ctx.settings.default_timeout
    result = run_process(ProcessRequest(
        argv=[sys.executable, "-I", "-c", _CHILD, _PACKAGE_PARENT], cwd=ctx.workspace,
        env=child_environment(ctx.host_env, protected=ctx.protected_env),
        stdin=json.dumps(request).encode(), timeout=timeout, max_output=_RG_OUTPUT_CAP, spill_dir=None,
        cancel=ctx.cancel))
    if result.interrupted:
        raise ToolError("search stopped: interrupted")
    if result.timed_out:
        raise ToolError(f"search stopped: timed out after {timeout:g} s. Without ripgrep, patterns run on "
                        "Python's backtracking engine, where nested repetition such as (a+)+ or (a|a)* can "
                        "take practically forever on some lines: simplify the pattern or narrow the path")
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        reply = None
    if result.exit_code != 0 or result.truncated or not isinstance(reply, dict):
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.exit_code}"]
        raise ToolError(f"search failed: {detail[0]}")
    if "error" in reply:
        raise ToolError(reply["error"])
    return _Found(lines=reply["lines"], total=reply["total"], files=reply["files"],
                  incomplete=reply["incomplete"])


def _grep_child_main() -> None:
    """The child's side of _grep_in_child: the request as JSON on stdin, the _Found as JSON on stdout."""
    request = json.load(sys.stdin)
    ctx = RuntimeContext(workspace=Path(request["workspace"]), spill_dir=Path(request["spill_dir"]))
    try:
        glob = request["glob"]
        found = _grep_python(_compile_regex(request["pattern"]), Path(request["target"]),
                             compile_glob(glob) if glob else None, ctx)
        reply: dict[str, object] = {"lines": found.lines, "total": found.total, "files": found.files,
                                    "incomplete": found.incomplete}
    except ToolError as exc:
        reply = {"error": str(exc)}
    json.dump(reply, sys.stdout)


def _grep_python(rx: re.Pattern[str], target: Path, matcher: Callable[[str], bool] | None,
                 ctx: RuntimeContext) -> _Found:
    found = _Found()
    for file in _candidates(target, matcher, ctx):
        shown = display_path(ctx, file)
        for lineno, line in _search_file(rx, file):
            if not found.add(shown, lineno, line):
                return found
    return found


def _search_file(rx: re.Pattern[str], file: Path) -> Iterator[tuple[int, str]]:
    """Matching lines of one file, unless it is too big, binary or unreadable (rg skips those too)."""
    try:
        if file.stat().st_size > MAX_FILE_BYTES or _is_binary(file):
            return
        # Lines end at "\n" only, as in rg (and grep): a "\r" anywhere, even before the "\n", is text,
        # so "x$" does not match "x\r\n" in either engine. The shown text drops a final "\r" (_Found.add).
        with open(file, encoding="utf-8", errors="replace", newline="\n") as f:
            for lineno, line in enumerate(f, 1):
                line = line.removesuffix("\n")
                if rx.search(line):
                    yield lineno, line
    except OSError:
        return  # vanished or unreadable


def _candidates(target: Path, matcher: Callable[[str], bool] | None,
                ctx: RuntimeContext) -> Iterator[Path]:
    if target.is_file():
        yield target  # named explicitly: searched even if hidden or ignored
        return
    for file in _Walk(target, ctx).files():
        if matcher is None or matcher(file.relative_to(target).as_posix()):
            yield file


# ---------------------------------------------------------------- ripgrep path

def _ripgrep(ctx: RuntimeContext) -> str | None:
    return shutil.which("rg", path=ctx.host_env.get("PATH"))


def _rg_args() -> list[str]:
    """Flags that make rg walk like the Python path; the target comes last, after ``--``. Ignore files
    other than the .gitignore files at or below the target are off (parent folders' .gitignore rules are
    applied afterwards, by _Walk.admits, within the workspace only)."""
    return ["--no-config", "--no-require-git", "--no-ignore-parent", "--no-ignore-global",
            "--no-ignore-exclude", "--no-ignore-dot", "--no-follow", "--no-messages", "--sort=path",
            f"--max-filesize={MAX_FILE_BYTES}", *(f"--glob=!{name}/" for name in sorted(SKIP_DIRS))]


def _rg_target(target: Path, ctx: RuntimeContext) -> str:
    # Relative to the workspace (rg runs there) so printed paths match display_path.
    shown = display_path(ctx, target)
    return shown if os.path.isabs(shown) else f"./{shown}" if shown != "." else "."


def _run_rg(argv: list[str], ctx: RuntimeContext) -> tuple[int | None, str, str, bool]:
    result = run_process(ProcessRequest(
        argv=argv, cwd=ctx.workspace, env=child_environment(ctx.host_env, protected=ctx.protected_env),
        timeout=ctx.settings.default_timeout, max_output=_RG_OUTPUT_CAP, spill_dir=None, cancel=ctx.cancel))
    if result.timed_out or result.interrupted:
        raise ToolError("search stopped: " + ("timed out" if result.timed_out else "interrupted"))
    return result.exit_code, result.stdout, result.stderr, result.truncated


def _rg_search(rg: str, rg_pattern: str, targets: list[str], ctx: RuntimeContext, *, text: bool = False,
               extra: tuple[str, ...] = ()) -> tuple[str, bool]:
    """rg's ``--null --line-number`` output for ``rg_pattern`` (see rg_regex) in ``targets``, and whether
    it was cut. ``text``: search files with NUL bytes as text (--text) instead of reporting them."""
    argv = [rg, *_rg_args(), "--line-number", "--with-filename", "--no-heading", "--null", "--color=never",
            # Encodings are not guessed from a BOM (UTF-16 stays binary); binary files are reported
            # rather than silently dropped, see parse_rg_matches.
            "--encoding=none", "--text" if text else "--binary",
            f"--max-columns={_RG_MAX_COLUMNS}", "--max-columns-preview",
            *extra, "--", rg_pattern, *targets]
    code, out, err, truncated = _run_rg(argv, ctx)
    if code not in (0, 1) and not out and err.strip():
        # With --no-messages only fatal errors are printed: a pattern rg will not compile (too big, say).
        raise ToolError(f"grep cannot run this pattern: ripgrep says: {err.strip()[:1000]}")
    return out, truncated


def _grep_rg(rg: str, rg_pattern: str, target: Path, glob: str | None, ctx: RuntimeContext) -> _Found:
    folder = target.is_dir()
    matcher = compile_glob(glob) if glob and folder else None  # a named file is searched whatever the glob
    # rg anchors a glob containing "/" differently from ours; those are left to the post-filter below.
    # (A --glob also overrides rg's hidden and .gitignore rules; _Walk.admits re-applies them.)
    pre_filter = (f"--glob={glob}",) if matcher and glob and "/" not in glob.strip().rstrip("/") else ()
    out, truncated = _rg_search(rg, rg_pattern, [_rg_target(target, ctx)], ctx, extra=pre_filter)

    def as_text(files: list[Path]) -> dict[Path, list[tuple[int, str]]]:
        lines: dict[Path, list[tuple[int, str]]] = {}
        for start in range(0, len(files), 100):
            names = [_rg_target(file, ctx) for file in files[start:start + 100]]
            text_out, _ = _rg_search(rg, rg_pattern, names, ctx, text=True)
            for name, lineno, text in _rg_lines(text_out):
                if lineno is not None:
                    lines.setdefault(Path(os.path.normpath(ctx.workspace / name)), []).append((lineno, text))
        return lines

    found = parse_rg_matches(out, target, matcher, ctx, as_text)
    found.incomplete = found.incomplete or truncated
    return found


# rg --binary reports a file with a NUL byte (anywhere) and a match as "<path>: binary file matches ...".
_RG_BINARY_NOTE = re.compile(r"(.+): (?:binary file matches|WARNING: stopped searching binary file) ")

TextSearch = Callable[[list[Path]], dict[Path, list[tuple[int, str]]]]


def parse_rg_matches(out: str, target: Path, matcher: Callable[[str], bool] | None, ctx: RuntimeContext,
                     as_text: TextSearch | None = None) -> _Found:
    """Turn ``rg --null --line-number --binary`` output into the same records the Python path makes: files
    the Python walk would skip are dropped (for a folder target); a file rg found a NUL byte in is searched
    again as text (``as_text``: files -> their matching lines) when the NUL lies beyond the first 8 KB,
    where it does not make a file binary."""
    walk = _Walk(target, ctx)
    files: list[tuple[Path, list[tuple[int, str]] | None]] = []  # None: rg saw a NUL byte in it
    name_now, wanted = None, False
    for name, lineno, text in _rg_lines(out):
        if name != name_now:  # rg prints a file's lines together, then (binary file) its note
            name_now, file = name, Path(os.path.normpath(ctx.workspace / name))
            wanted = _wanted(file, target, matcher, walk)
            if wanted:
                files.append((file, []))
        if not wanted:
            continue
        lines = files[-1][1]
        if lineno is None:  # the lines rg printed before it saw the NUL go; the file's text decides
            files[-1] = (file, None)
        elif lines is not None:
            lines.append((lineno, text))
    late = [file for file, lines in files if lines is None and not _is_binary(file)]
    again = as_text(late) if late and as_text is not None else {}
    found = _Found()
    for file, lines in files:
        if lines is None:
            lines = again.get(file, [])
        for lineno, text in lines:
            if not found.add(display_path(ctx, file), lineno, text):
                return found
    return found


def _rg_lines(out: str) -> Iterator[tuple[str, int | None, str]]:
    """(name, line number, text) per line of rg output; line number None for a binary-file note."""
    for line in out.split("\n"):
        name, sep, rest = line.partition("\x00")
        lineno, colon, text = rest.partition(":")
        if sep and colon and lineno.isdigit():
            yield name, int(lineno), text
        elif not sep and (binary := _RG_BINARY_NOTE.match(line)):
            yield binary[1], None, ""
        # else: a truncation marker or a partial line


def _wanted(file: Path, target: Path, matcher: Callable[[str], bool] | None, walk: _Walk) -> bool:
    if file == target:
        return True  # one file named explicitly
    if not walk.admits(file):  # also False outside target
        return False
    return matcher is None or matcher(file.relative_to(target).as_posix())


def _glob_rg(rg: str, target: Path, ctx: RuntimeContext) -> list[Path] | None:
    """The files rg lists (a superset, see _rg_args), or None when it gave no answer."""
    argv = [rg, "--files", *_rg_args(), "--null", "--", _rg_target(target, ctx)]
    code, out, _err, _ = _run_rg(argv, ctx)
    if code not in (0, 1) and not out:
        return None
    names = (name.strip("\n") for name in out.split("\x00"))
    return [Path(os.path.normpath(ctx.workspace / name)) for name in names if name]


# ---------------------------------------------------------------- glob

def _where(ctx: RuntimeContext, target: Path) -> str:
    shown = display_path(ctx, target)
    return "the workspace root" if shown == "." else shown


def glob(pattern: str, path: str = ".", *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path)
    if not target.is_dir():
        raise ToolError(f"{path} is not a folder" if target.exists() else f"folder not found: {path}")
    matcher = compile_glob(pattern)
    rg = _ripgrep(ctx)
    files: Iterable[Path] | None = _glob_rg(rg, target, ctx) if rg else None
    if files is not None:
        keep = _Walk(target, ctx).admits  # what rg lists, held to the Python walk's rules
    else:
        files = _Walk(target, ctx).files()
        keep = _not_too_big  # rg leaves out files over grep's size limit too
    hits: list[str] = []
    total = 0
    for file in files:
        if is_within(file, target) and matcher(file.relative_to(target).as_posix()) and keep(file):
            total += 1
            if len(hits) < GLOB_MAX_RESULTS:
                hits.append(display_path(ctx, file))
    where = _where(ctx, target)
    if not total:
        return ToolResult(f"No files match {pattern!r} in {where}.", details={"files": 0})
    if total > len(hits):
        hits.append(f"[{total:,} files match; showing the first {len(hits)}. Narrow the pattern or path]")
    return ToolResult("\n".join(hits), details={"files": total, "truncated": total > GLOB_MAX_RESULTS})
