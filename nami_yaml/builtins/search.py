"""grep and glob: search the workspace without going through bash.

ripgrep does the work when it is installed; otherwise a Python walk does. Both paths share the ignore
rules (hidden entries, node_modules, __pycache__, simple .gitignore patterns), the glob semantics and the
output format, so the model cannot tell which one ran. The Python engine is the reference: rg is told to
find a superset (no ignore sources beyond the search folder's .gitignore files, no binary quitting) and
what it finds is held to the Python rules; patterns rg reads differently from Python ``re`` and single
files are searched in Python.
"""

from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.builtins.workspace import display_path, is_within, resolve_path
from nami_yaml.errors import ToolError
from nami_yaml.registry.result import ToolResult
from nami_yaml.runners.process import ProcessRequest, child_environment, run_process
from nami_yaml.runtime import RuntimeContext

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
    files: set[str] = field(default_factory=set)
    incomplete: bool = False  # counting stopped early

    def add(self, shown: str, lineno: int, text: str) -> bool:
        """Record one matching line; False once counting should stop."""
        self.total += 1
        self.files.add(shown)
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
    rx = _compile_regex(pattern)
    matcher = compile_glob(glob) if glob else None
    rg = _ripgrep(ctx)
    found = None
    # One named file is quick in Python, which applies the size and binary rules to it exactly.
    if rg and target.is_dir() and not _RG_READS_DIFFERENTLY.search(pattern):
        found = _grep_rg(rg, pattern, rx, target, glob, matcher, ctx)
    if found is None:  # no rg, or rg refused the pattern (look-around, backreferences, \Z, ...)
        found = _grep_python(rx, target, matcher, ctx)
    where = _where(ctx, target)
    if not found.total:
        return ToolResult(f"No matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob
                                                                      else "") + ".",
                          details={"matches": 0, "files": 0})
    count = f"{found.total:,}{'+' if found.incomplete else ''}"
    summary = f"[{count} matching lines in {len(found.files):,} files"
    if found.total > len(found.lines):
        summary += f"; showing the first {len(found.lines)}. Narrow the pattern, path or glob"
    return ToolResult("\n".join([*found.lines, summary + "]"]),
                      details={"matches": found.total, "files": len(found.files),
                               "truncated": found.total > len(found.lines)})


# Constructs that Python ``re`` and ripgrep both accept but read differently: rg's POSIX classes and set
# operations inside [...] (Python: literal characters, with a FutureWarning) and rg's word-boundary escapes
# \< \> \b{...} (Python: literal characters). Such patterns are searched in Python, the documented syntax.
_RG_READS_DIFFERENTLY = re.compile(r"\[[^\]]*(?:\[|&&|--|~~|\|\|)|\\[<>]|\\b\{")


def _compile_regex(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # see _RG_READS_DIFFERENTLY
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None


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


def _grep_rg(rg: str, pattern: str, rx: re.Pattern[str], target: Path, glob: str | None,
             matcher: Callable[[str], bool] | None, ctx: RuntimeContext) -> _Found | None:
    """rg's matches, or None when rg gave no answer (it refused the pattern): search in Python then."""
    # rg anchors a glob containing "/" differently from ours; those are left to the post-filter below.
    # (A --glob also overrides rg's hidden and .gitignore rules; _Walk.admits re-applies them.)
    pre_filter = [f"--glob={glob}"] if glob and "/" not in glob.strip().rstrip("/") else []
    argv = [rg, *_rg_args(), "--line-number", "--with-filename", "--no-heading", "--null", "--color=never",
            # Encodings are not guessed from a BOM (UTF-16 stays binary); binary files are reported
            # rather than silently dropped, see parse_rg_matches.
            "--encoding=none", "--binary",
            f"--max-columns={_RG_MAX_COLUMNS}", "--max-columns-preview",
            *pre_filter, "--", pattern, _rg_target(target, ctx)]
    code, out, _err, truncated = _run_rg(argv, ctx)
    if code not in (0, 1) and not out:
        return None
    found = parse_rg_matches(out, target, matcher, ctx, rx)
    found.incomplete = found.incomplete or truncated
    return found


# rg --binary reports a file with a NUL byte (anywhere) and a match as "<path>: binary file matches ...".
_RG_BINARY_NOTE = re.compile(r"(.+): (?:binary file matches|WARNING: stopped searching binary file) ")


def parse_rg_matches(out: str, target: Path, matcher: Callable[[str], bool] | None,
                     ctx: RuntimeContext, rx: re.Pattern[str] | None = None) -> _Found:
    """Turn ``rg --null --line-number --binary`` output (target a folder) into the same records the Python
    path makes: files the Python walk would skip are dropped; a file rg found a NUL byte in is searched
    again in Python (``rx``) when the NUL lies beyond the first 8 KB, where it does not make a file binary."""
    found = _Found()
    for file, lineno, text in _rg_records(out, target, matcher, ctx, rx):
        if not found.add(display_path(ctx, file), lineno, text):
            break
    return found


def _rg_records(out: str, target: Path, matcher: Callable[[str], bool] | None, ctx: RuntimeContext,
                rx: re.Pattern[str] | None) -> Iterator[tuple[Path, int, str]]:
    """(file, line number, text) in output order. rg prints a file's lines together (then, for a binary
    file, its note), so they are held back until the next file starts."""
    walk = _Walk(target, ctx)
    name_now, file, wanted = None, target, False
    held: list[tuple[Path, int, str]] = []
    for line in out.split("\n"):
        name, sep, rest = line.partition("\x00")
        lineno, colon, text = rest.partition(":")
        binary = None if sep else _RG_BINARY_NOTE.match(line)
        if binary:
            name = binary[1]
        elif not sep or not colon or not lineno.isdigit():
            continue  # a truncation marker or a partial line
        if name != name_now:
            yield from held
            held = []
            name_now, file = name, Path(os.path.normpath(ctx.workspace / name))
            wanted = _wanted(file, target, matcher, walk)
        if not wanted:
            continue
        if binary:  # the lines rg printed before it saw the NUL go; Python decides what the file holds
            held = [(file, n, text) for n, text in _search_file(rx, file)] if rx is not None else []
        else:
            held.append((file, int(lineno), text))
    yield from held


def _wanted(file: Path, target: Path, matcher: Callable[[str], bool] | None, walk: _Walk) -> bool:
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
