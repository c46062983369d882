"""grep and glob: search the workspace without going through bash.

ripgrep does the work when it is installed; otherwise a Python walk does. Both paths share the ignore
rules (hidden entries, node_modules, __pycache__, simple .gitignore patterns), the glob semantics and the
output format, so the model cannot tell which one ran.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
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


@dataclass
class _Walk:
    root: Path
    ctx: RuntimeContext
    rules: list[_IgnoreRule] = field(default_factory=list)

    def files(self) -> Iterator[Path]:
        """Regular files under root in path order, as ``rg --sort path`` would list them."""
        # .gitignore files above the search folder apply too, but only up to the workspace root.
        above = [p for p in reversed(self.root.parents) if is_within(p, self.ctx.workspace)]
        self.rules = [rule for folder in above for rule in _read_gitignore(folder)]
        yield from self._walk(self.root)

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
        for rule in self.rules:
            if rule.dir_only and not entry.is_dir(follow_symlinks=False):
                continue
            if is_within(path, rule.base) and rule.match(path.relative_to(rule.base).as_posix()):
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
    matcher = compile_glob(glob) if glob else None
    rg = _ripgrep(ctx)
    found = (_grep_rg(rg, pattern, target, glob, matcher, ctx) if rg
             else _grep_python(pattern, target, matcher, ctx))
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


def _grep_python(pattern: str, target: Path, matcher: Callable[[str], bool] | None,
                 ctx: RuntimeContext) -> _Found:
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    found = _Found()
    for file in _candidates(target, matcher, ctx):
        try:
            if file.stat().st_size > MAX_FILE_BYTES or _is_binary(file):
                continue
            with open(file, encoding="utf-8", errors="replace", newline="") as f:
                shown = display_path(ctx, file)
                for lineno, line in enumerate(f, 1):
                    line = line.rstrip("\r\n")
                    if rx.search(line) and not found.add(shown, lineno, line):
                        return found
        except OSError:
            continue  # vanished or unreadable: rg skips those too
    return found


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
    """Flags that make rg walk like the Python path; the target comes last, after ``--``."""
    return ["--no-config", "--no-require-git", "--no-follow", "--sort=path", f"--max-filesize={MAX_FILE_BYTES}",
            *(f"--glob=!{name}" for name in sorted(SKIP_DIRS))]


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


def _grep_rg(rg: str, pattern: str, target: Path, glob: str | None,
             matcher: Callable[[str], bool] | None, ctx: RuntimeContext) -> _Found:
    # rg anchors a glob containing "/" differently from ours; those are left to the post-filter below.
    pre_filter = [f"--glob={glob}"] if glob and "/" not in glob.strip().rstrip("/") else []
    argv = [rg, *_rg_args(), "--line-number", "--with-filename", "--no-heading", "--null",
            "--color=never", *pre_filter, "--", pattern, _rg_target(target, ctx)]
    code, out, err, truncated = _run_rg(argv, ctx)
    if code not in (0, 1) and not out:
        raise ToolError(f"grep failed: {err.strip() or f'rg exit code {code}'}")
    found = parse_rg_matches(out, target, matcher, ctx)
    found.incomplete = found.incomplete or truncated
    return found


def parse_rg_matches(out: str, target: Path, matcher: Callable[[str], bool] | None,
                     ctx: RuntimeContext) -> _Found:
    """Turn ``rg --null --line-number`` output into the same records the Python path makes."""
    found = _Found()
    for line in out.split("\n"):
        name, sep, rest = line.partition("\x00")
        lineno, colon, text = rest.partition(":")
        if not sep or not colon or not lineno.isdigit():
            continue  # a truncation marker or a partial line
        file = Path(os.path.normpath(ctx.workspace / name))
        if not is_within(file, target):
            continue
        if matcher and target.is_dir() and not matcher(file.relative_to(target).as_posix()):
            continue
        if not found.add(display_path(ctx, file), int(lineno), text):
            break
    return found


def _glob_rg(rg: str, target: Path, ctx: RuntimeContext) -> Iterator[Path]:
    argv = [rg, "--files", *_rg_args(), "--null", "--", _rg_target(target, ctx)]
    code, out, err, _ = _run_rg(argv, ctx)
    if code not in (0, 1) and not out:
        raise ToolError(f"glob failed: {err.strip() or f'rg exit code {code}'}")
    for name in out.split("\x00"):
        name = name.strip("\n")
        if name:
            yield Path(os.path.normpath(ctx.workspace / name))


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
    files = _glob_rg(rg, target, ctx) if rg else _Walk(target, ctx).files()
    hits: list[str] = []
    total = 0
    for file in files:
        if is_within(file, target) and matcher(file.relative_to(target).as_posix()):
            total += 1
            if len(hits) < GLOB_MAX_RESULTS:
                hits.append(display_path(ctx, file))
    where = _where(ctx, target)
    if not total:
        return ToolResult(f"No files match {pattern!r} in {where}.", details={"files": 0})
    if total > len(hits):
        hits.append(f"[{total:,} files match; showing the first {len(hits)}. Narrow the pattern or path]")
    return ToolResult("\n".join(hits), details={"files": total, "truncated": total > GLOB_MAX_RESULTS})
