"""grep's and glob's ripgrep engine: the argv, running rg, and its output read back into the records the
Python engine makes.

rg is told to find a superset (no ignore sources beyond the search folder's .gitignore files, no binary
quitting) and what it finds is held to the Python walk's rules (search_walk.Walk.admits). The pattern it
gets is already in its syntax (search_regex.rg_regex).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from nami_yaml.builtins.search_found import ENGINE_OUTPUT_CAP, MATCH_LINE_MAX_CHARS, Found
from nami_yaml.builtins.search_walk import MAX_FILE_BYTES, SKIP_DIRS, Walk, compile_glob, is_binary
from nami_yaml.builtins.workspace import display_path
from nami_yaml.env_secrets import child_environment
from nami_yaml.errors import ToolError
from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.plan import KIND_NAMI, plan_for
from nami_yaml.runtime import RuntimeContext

# Longer lines are cut by rg (a preview of at least MATCH_LINE_MAX_CHARS characters stays), so a minified
# file cannot fill the output cap.
_RG_MAX_COLUMNS = 4 * MATCH_LINE_MAX_CHARS


def ripgrep(ctx: RuntimeContext) -> str | None:
    return shutil.which("rg", path=ctx.host_env.get("PATH"))


def _rg_args() -> list[str]:
    """Flags that make rg walk like the Python path; the target comes last, after ``--``. Ignore files
    other than the .gitignore files at or below the target are off (parent folders' .gitignore rules are
    applied afterwards, by Walk.admits, within the workspace only)."""
    return ["--no-config", "--no-require-git", "--no-ignore-parent", "--no-ignore-global",
            "--no-ignore-exclude", "--no-ignore-dot", "--no-follow", "--no-messages", "--sort=path",
            f"--max-filesize={MAX_FILE_BYTES}", *(f"--glob=!{name}/" for name in sorted(SKIP_DIRS))]


def _rg_target(target: Path, ctx: RuntimeContext) -> str:
    # Relative to the workspace (rg runs there) so printed paths match display_path.
    shown = display_path(ctx, target)
    return shown if os.path.isabs(shown) else f"./{shown}" if shown != "." else "."


def _run_rg(argv: list[str], ctx: RuntimeContext) -> tuple[int | None, str, str, bool]:
    result = run_process(ProcessRequest(
        argv=argv, cwd=ctx.workspace, env=child_environment(ctx.host_env, protected=ctx.protected_env, scrub=ctx.env_scrub),
        timeout=ctx.settings.default_timeout, max_output=ENGINE_OUTPUT_CAP, spill_dir=None, cancel=ctx.cancel,
        sandbox=plan_for(ctx, kind=KIND_NAMI, read_only=True)))
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


def grep_rg(rg: str, rg_pattern: str, target: Path, glob: str | None, ctx: RuntimeContext) -> Found:
    folder = target.is_dir()
    matcher = compile_glob(glob) if glob and folder else None  # a named file is searched whatever the glob
    # rg anchors a glob containing "/" differently from ours; those are left to the post-filter below.
    # (A --glob also overrides rg's hidden and .gitignore rules; Walk.admits re-applies them.)
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
                     as_text: TextSearch | None = None) -> Found:
    """Turn ``rg --null --line-number --binary`` output into the same records the Python path makes: files
    the Python walk would skip are dropped (for a folder target); a file rg found a NUL byte in is searched
    again as text (``as_text``: files -> their matching lines) when the NUL lies beyond the first 8 KB,
    where it does not make a file binary."""
    walk = Walk(target, ctx)
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
    late = [file for file, lines in files if lines is None and not is_binary(file)]
    again = as_text(late) if late and as_text is not None else {}
    found = Found()
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


def _wanted(file: Path, target: Path, matcher: Callable[[str], bool] | None, walk: Walk) -> bool:
    if file == target:
        return True  # one file named explicitly
    if not walk.admits(file):  # also False outside target
        return False
    return matcher is None or matcher(file.relative_to(target).as_posix())


def glob_rg(rg: str, target: Path, ctx: RuntimeContext) -> list[Path] | None:
    """The files rg lists (a superset, see _rg_args), or None when it gave no answer."""
    argv = [rg, "--files", *_rg_args(), "--null", "--", _rg_target(target, ctx)]
    code, out, _err, _ = _run_rg(argv, ctx)
    if code not in (0, 1) and not out:
        return None
    names = (name.strip("\n") for name in out.split("\x00"))
    return [Path(os.path.normpath(ctx.workspace / name)) for name in names if name]
