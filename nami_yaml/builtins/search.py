"""grep and glob: search the workspace without going through bash.

ripgrep does the work when it is installed (search_rg); otherwise a Python walk does (search_python). Both
paths share the ignore rules (hidden entries, node_modules, __pycache__, simple .gitignore patterns), the glob
semantics (search_walk) and the output format (search_found and this module), so the model cannot tell which
one ran. The Python engine is the reference: rg is told to find a superset and what it finds is held to the
Python rules.

Patterns are read as Python ``re`` reads them and handed to rg rewritten in its syntax (search_regex).
Constructs only a backtracking engine can run are refused on both engines, and without rg the Python engine
runs in a child process that the tool timeout and the cancel switch kill.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nami_yaml.builtins.search_found import GREP_COUNT_LIMIT, GREP_MAX_MATCHES, MATCH_LINE_MAX_CHARS, Found
from nami_yaml.builtins.search_python import _grep_python, _search_file, grep_in_child
from nami_yaml.builtins.search_regex import compile_regex, rg_regex
from nami_yaml.builtins.search_rg import TextSearch, glob_rg, grep_rg, parse_rg_matches
from nami_yaml.builtins.search_rg import ripgrep as _ripgrep
from nami_yaml.builtins.search_walk import (
    MAX_FILE_BYTES,
    SKIP_DIRS,
    Walk,
    compile_glob,
    not_too_big,
    searchable,
)
from nami_yaml.builtins.workspace import display_path, is_within, resolve_path
from nami_yaml.display import plural
from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runtime import RuntimeContext

# The names this module offered before it was split, and those the tests patch (_grep_python, _search_file).
__all__ = ["GLOB_MAX_RESULTS", "GREP_COUNT_LIMIT", "GREP_MAX_MATCHES", "MATCH_LINE_MAX_CHARS", "MAX_FILE_BYTES",
           "SKIP_DIRS", "TextSearch", "_grep_python", "_ripgrep", "_search_file", "compile_glob", "glob", "grep",
           "parse_rg_matches", "rg_regex"]

GLOB_MAX_RESULTS = 500


# ---------------------------------------------------------------- grep

def grep(pattern: str, path: str = ".", glob: str | None = None, *, ctx: RuntimeContext) -> ToolResult:
    target = resolve_path(ctx, path)
    if not target.exists():
        raise ToolError(f"path not found: {path}")
    compile_regex(pattern)  # syntax errors read the same whichever engine runs
    rg_pattern = rg_regex(pattern)  # and so do refusals of what only a backtracking engine can run
    if glob:
        compile_glob(glob)
    rg = _ripgrep(ctx)
    if not target.is_dir() and not searchable(target):
        found = Found()  # too big, binary or not a regular file (a FIFO would block rg): skipped
    elif rg:
        found = grep_rg(rg, rg_pattern, target, glob, ctx)
    else:
        found = grep_in_child(pattern, target, glob, ctx)
    where = _where(ctx, target)
    if not found.total:
        return ToolResult(f"No matches for {pattern!r} in {where}" + (f" (files matching {glob!r})" if glob
                                                                      else "") + ".",
                          details={"matches": 0, "files": 0})
    count = f"{found.total:,}{'+' if found.incomplete else ''}"
    noun = "line" if found.total == 1 and not found.incomplete else "lines"
    summary = f"[{count} matching {noun} in {plural(found.files, 'file')}"
    if found.total > len(found.lines):
        summary += f"; showing the first {len(found.lines)}. Narrow the pattern, path or glob"
    return ToolResult("\n".join([*found.lines, summary + "]"]),
                      details={"matches": found.total, "files": found.files,
                               "truncated": found.total > len(found.lines)})


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
    files: Iterable[Path] | None = glob_rg(rg, target, ctx) if rg else None
    if files is not None:
        keep = Walk(target, ctx).admits  # what rg lists, held to the Python walk's rules
    else:
        files = Walk(target, ctx).files()
        keep = not_too_big  # rg leaves out files over grep's size limit too
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
        hits.append(f"[{plural(total, 'file')} match; showing the first {len(hits)}. Narrow the pattern or path]")
    return ToolResult("\n".join(hits), details={"files": total, "truncated": total > GLOB_MAX_RESULTS})
