"""What a write would do to a file, before it runs: a unified diff for an approval prompt.

edit_file's change is computed with edit_file's own matching (``builtins.files.edited_text``), so the
reviewer sees what the file will become, not the raw ``old_text``/``new_text`` strings. Nothing here
writes. Where a diff cannot say what changes (whitespace only, line endings, a binary file) a note says
so and ``exact`` asks the prompt to show the values in full as well.

Lines are plain text for a person; the CLI escapes control characters (``display.visible``) and colours.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from nami_yaml.builtins.files import (
    BINARY_SNIFF_BYTES,
    EDIT_MAX_BYTES,
    edited_text,
    read_for_edit,
    write_target,
)
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

CONTEXT_LINES = 3
NEW_FILE_LINES = 20  # the first lines of a new file shown
NO_NEWLINE = "\\ No newline at end of file"
EDIT_FILE = "nami_yaml.builtins.files:edit_file"
WRITE_FILE = "nami_yaml.builtins.files:write_file"


@dataclass
class FileChange:
    """A write's effect on one file. ``diff`` holds unified-diff lines (``---``/``+++`` headers, ``@@``
    hunks, `` ``/``+``/``-`` lines), or, for a new file, its first lines as ``+`` lines."""

    path: str
    action: str  # "edit" | "create" | "overwrite" | "fail"
    diff: list[str] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    new_bytes: int = 0
    new_lines: int = 0
    more_lines: int = 0  # lines of a new file not in ``diff``
    notes: list[str] = field(default_factory=list)
    exact: bool = False  # the diff cannot show the change: show the arguments in full too
    error: str | None = None  # the tool would refuse (action "fail"): why

    @property
    def counts(self) -> str:
        return f"+{self.added} -{self.removed}"


def preview_call(call: Any) -> FileChange | None:
    """The change a prepared built-in write_file or edit_file call would make; None for any other call
    (a YAML tool of the same name is not the built-in). Never raises: a call that would fail says why."""
    ctx = getattr(call, "ctx", None)
    if getattr(call, "kind", None) != "entrypoint" or not isinstance(ctx, RuntimeContext):
        return None
    try:
        target = call.plan().get("entrypoint")
    except Exception:
        return None
    args = call.arguments
    if target == EDIT_FILE:
        return preview_edit(args["path"], args["old_text"], args["new_text"], bool(args.get("replace_all")), ctx)
    if target == WRITE_FILE:
        return preview_write(args["path"], args["content"], ctx)
    return None


def preview_edit(path: str, old_text: str, new_text: str, replace_all: bool, ctx: RuntimeContext) -> FileChange:
    try:
        _, shown, raw = read_for_edit(path, ctx)
        edit = edited_text(raw, old_text, new_text, replace_all, shown)
    except (ToolError, OSError) as exc:
        return FileChange(path, "fail", error=_reason(exc))
    change = FileChange(shown, "edit", new_bytes=len(edit.encoded()))
    _fill_diff(change, edit.before, edit.after)
    if edit.count > 1:
        change.notes.append(f"replaces {edit.count} places")
    if edit.crlf:
        change.notes.append("the file has CRLF line ends; they are kept")
    if _squeezed(old_text) == _squeezed(new_text):
        change.notes.append("only whitespace changes, which a diff does not show: the exact texts follow")
        change.exact = True
    elif "\r" in old_text + new_text and not edit.crlf:
        change.notes.append("the texts hold carriage returns (\\r): the exact texts follow")
        change.exact = True
    return change


def preview_write(path: str, content: str, ctx: RuntimeContext) -> FileChange:
    data = content.encode("utf-8", errors="surrogateescape")
    try:
        target, shown = write_target(path, ctx)
        old: bytes | None = None
        if target.exists():
            with open(target, "rb") as f:
                old = f.read(EDIT_MAX_BYTES + 1)
    except (ToolError, OSError) as exc:
        return FileChange(path, "fail", error=_reason(exc))
    new_lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    change = FileChange(shown, "create" if old is None else "overwrite", new_bytes=len(data), new_lines=new_lines)
    if "\x00" in content[:BINARY_SNIFF_BYTES]:
        change.notes.append("the new content is binary (NUL characters): shown escaped")
        change.exact = True
    if old is None:
        lines = _split(content)
        change.diff = ["+" + line.removesuffix("\n") for line in lines[:NEW_FILE_LINES]]
        change.added, change.more_lines = len(lines), max(0, len(lines) - NEW_FILE_LINES)
        return change
    if len(old) > EDIT_MAX_BYTES or b"\x00" in old[:BINARY_SNIFF_BYTES]:
        what = "a binary file" if b"\x00" in old[:BINARY_SNIFF_BYTES] else f"a file over {EDIT_MAX_BYTES:,} bytes"
        change.notes.append(f"replaces {what}, so no diff: the whole file is replaced")
        change.exact = True
        return change
    before = old.decode("utf-8", errors="surrogateescape")
    if before == content:
        change.notes.append("the content is the same as the file's: nothing changes")
        return change
    old_crlf, new_crlf = _crlf(before), _crlf(content)
    if old_crlf != new_crlf:
        change.notes.append(f"every line end changes from {'CRLF' if old_crlf else 'LF'} to "
                            f"{'CRLF' if new_crlf else 'LF'} (the diff compares the text without them)")
    if old_crlf or new_crlf:
        before, content = before.replace("\r\n", "\n"), content.replace("\r\n", "\n")
    _fill_diff(change, before, content)
    if not change.diff:
        change.notes.append("only the line ends change")
    elif _squeezed(before) == _squeezed(content):
        change.notes.append("only whitespace changes, which a diff does not show: the exact content follows")
        change.exact = True
    return change


def unified(before: str, after: str, path: str, context: int = CONTEXT_LINES) -> list[str]:
    """``diff -u`` lines of two texts (split on \\n only: \\r, \\f or U+2028 are characters, not line
    breaks), with git's marker for a last line without a newline."""
    out: list[str] = []
    for line in difflib.unified_diff(_split(before), _split(after), f"a/{path}", f"b/{path}", n=context):
        if line.endswith("\n"):
            out.append(line[:-1])
        else:
            out.extend((line, NO_NEWLINE))
    return [_printable(line) for line in out]


def _fill_diff(change: FileChange, before: str, after: str) -> None:
    change.diff = unified(before, after, change.path)
    body = change.diff[2:]  # after the ---/+++ header (a removed line "-- x" also starts with ---)
    change.added = sum(1 for line in body if line.startswith("+"))
    change.removed = sum(1 for line in body if line.startswith("-"))


def _split(text: str) -> list[str]:
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def _printable(line: str) -> str:
    # Bytes that are not UTF-8 were kept as lone surrogates (surrogateescape); shown as \xNN.
    return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _crlf(text: str) -> bool:
    return "\r\n" in text and text.count("\r\n") == text.count("\n")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
