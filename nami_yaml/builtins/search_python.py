"""grep's Python engine, for when ripgrep is not installed: the walk (search_walk) and ``re``, run in a
child process (grep_in_child) that the tool timeout and the cancel switch kill, since a backtrack in ``re``
holds the GIL, which no Ctrl-C or timeout can break, and even plain ``(a+)+$`` can backtrack for hours."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nami_yaml.builtins.search_found import ENGINE_OUTPUT_CAP, Found
from nami_yaml.builtins.search_regex import compile_regex
from nami_yaml.builtins.search_walk import MAX_FILE_BYTES, Walk, compile_glob, is_binary
from nami_yaml.builtins.workspace import display_path
from nami_yaml.env_secrets import child_environment
from nami_yaml.errors import ToolError
from nami_yaml.runners.pychild import ChildFailed, call_in_child
from nami_yaml.runners.sandbox.plan import KIND_NAMI, plan_for
from nami_yaml.runtime import RuntimeContext


def grep_in_child(pattern: str, target: Path, glob: str | None, ctx: RuntimeContext) -> Found:
    """_grep_python in a child process: a catastrophic backtrack in ``re`` never ends and holds the GIL,
    but a child is killed (with its process group) by the tool timeout or the cancel switch."""
    request = {"pattern": pattern, "target": str(target), "glob": glob, "workspace": str(ctx.workspace),
               "spill_dir": str(ctx.spill_dir)}
    timeout = ctx.settings.default_timeout
    try:
        reply = call_in_child(
            "nami_yaml.builtins.search_python:grep_child", request, timeout=timeout, cancel=ctx.cancel,
            env=child_environment(ctx.host_env, protected=ctx.protected_env, scrub=ctx.env_scrub),
            cwd=ctx.workspace, max_output=ENGINE_OUTPUT_CAP, sandbox=plan_for(ctx, kind=KIND_NAMI, read_only=True))
    except InterruptedError:
        raise ToolError("search stopped: interrupted") from None
    except TimeoutError:
        raise ToolError(f"search stopped: timed out after {timeout:g} s. Without ripgrep, patterns run on "
                        "Python's backtracking engine, where nested repetition such as (a+)+ or (a|a)* can "
                        "take practically forever on some lines: simplify the pattern or narrow the path") from None
    except ChildFailed as exc:
        if not sys.executable:
            raise ToolError("grep cannot run: ripgrep (rg) is not installed and no Python interpreter is known") from None
        raise ToolError(f"search failed: {exc}") from None
    if "error" in reply:
        raise ToolError(reply["error"])
    return Found(lines=reply["lines"], total=reply["total"], files=reply["files"],
                 incomplete=reply["incomplete"])


def grep_child(request: dict[str, Any]) -> dict[str, Any]:
    """The child's side of grep_in_child: the request in, the Found (or an error) out."""
    ctx = RuntimeContext(workspace=Path(request["workspace"]), spill_dir=Path(request["spill_dir"]))
    try:
        glob = request["glob"]
        found = _grep_python(compile_regex(request["pattern"]), Path(request["target"]),
                             compile_glob(glob) if glob else None, ctx)
    except ToolError as exc:
        return {"error": str(exc)}
    return {"lines": found.lines, "total": found.total, "files": found.files, "incomplete": found.incomplete}


def _grep_python(rx: re.Pattern[str], target: Path, matcher: Callable[[str], bool] | None,
                 ctx: RuntimeContext) -> Found:
    found = Found()
    for file in _candidates(target, matcher, ctx):
        shown = display_path(ctx, file)
        for lineno, line in _search_file(rx, file):
            if not found.add(shown, lineno, line):
                return found
    return found


def _search_file(rx: re.Pattern[str], file: Path) -> Iterator[tuple[int, str]]:
    """Matching lines of one file, unless it is too big, binary or unreadable (rg skips those too)."""
    try:
        if file.stat().st_size > MAX_FILE_BYTES or is_binary(file):
            return
        # Lines end at "\n" only, as in rg (and grep): a "\r" anywhere, even before the "\n", is text,
        # so "x$" does not match "x\r\n" in either engine. The shown text drops a final "\r" (Found.add).
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
    for file in Walk(target, ctx).files():
        if matcher is None or matcher(file.relative_to(target).as_posix()):
            yield file
