"""What a write would do, computed before it runs: edit_file's own matching, never a write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nami_yaml.app.toolset import BUILTIN_DIR
from nami_yaml.builtins import files
from nami_yaml.diffs import NO_NEWLINE, FileChange, preview_call, preview_edit, preview_write
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext

SOURCE = "".join(f"line {n}\n" for n in range(1, 21))


def unchanged(path: Path, before: bytes, mtime: int) -> None:
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


@pytest.fixture
def source(ctx: RuntimeContext) -> Path:
    path = ctx.workspace / "notes.txt"
    path.write_text(SOURCE)
    return path


def test_an_edit_is_a_diff_with_context_and_counts_and_writes_nothing(ctx: RuntimeContext, source: Path) -> None:
    before, mtime = source.read_bytes(), source.stat().st_mtime_ns
    change = preview_edit("notes.txt", "line 10\n", "line ten\nline ten and a half\n", False, ctx)
    unchanged(source, before, mtime)
    assert change.action == "edit" and change.error is None
    assert change.diff[:3] == ["--- a/notes.txt", "+++ b/notes.txt", "@@ -7,7 +7,8 @@"]
    assert change.diff[3:] == [" line 7", " line 8", " line 9", "-line 10", "+line ten", "+line ten and a half",
                               " line 11", " line 12", " line 13"]
    assert (change.added, change.removed, change.counts) == (2, 1, "+2 -1")
    assert not change.exact
    # What edit_file then writes is exactly what was shown.
    files.edit_file("notes.txt", "line 10\n", "line ten\nline ten and a half\n", ctx=ctx)
    assert source.read_text() == SOURCE.replace("line 10\n", "line ten\nline ten and a half\n")


def test_an_edit_that_would_fail_says_why_as_edit_file_would(ctx: RuntimeContext, source: Path) -> None:
    change = preview_edit("notes.txt", "line 1", "line one", False, ctx)  # also in lines 10-19
    assert change.action == "fail"
    assert change.error is not None and "matches 11 times" in change.error
    assert "not found" in (preview_edit("notes.txt", "nothing like it", "x", False, ctx).error or "")
    assert "outside the workspace" in (preview_edit("/etc/hostname", "a", "b", False, ctx).error or "")


def test_replace_all_and_crlf_are_noted(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "win.txt"
    path.write_bytes(b"a = 1\r\nb = 1\r\n")
    change = preview_edit("win.txt", "= 1", "= 2", True, ctx)
    assert change.diff[3:] == ["-a = 1", "-b = 1", "+a = 2", "+b = 2"]
    assert "replaces 2 places" in change.notes
    assert any("CRLF" in note for note in change.notes)
    assert path.read_bytes() == b"a = 1\r\nb = 1\r\n"


def test_a_whitespace_only_edit_asks_for_the_exact_texts(ctx: RuntimeContext) -> None:
    (ctx.workspace / "t.py").write_text("if x:\n    y()\n")
    change = preview_edit("t.py", "    y()", "\ty()", False, ctx)
    assert change.exact and any("whitespace" in note for note in change.notes)


def test_a_last_line_without_newline_is_marked(ctx: RuntimeContext) -> None:
    (ctx.workspace / "n.txt").write_text("one\ntwo")
    change = preview_edit("n.txt", "two", "2", False, ctx)
    assert change.diff[-4:] == ["-two", NO_NEWLINE, "+2", NO_NEWLINE]


def test_carriage_returns_and_form_feeds_are_characters_not_line_breaks(ctx: RuntimeContext) -> None:
    (ctx.workspace / "c.txt").write_text("a\fb\u2028c\n")
    change = preview_edit("c.txt", "a\fb", "a\rb", False, ctx)
    assert change.diff[3:] == ["-a\fb\u2028c", "+a\rb\u2028c"]  # one line each; escaping is the CLI's job
    assert change.exact


def test_bytes_that_are_not_utf8_show_as_escapes(ctx: RuntimeContext) -> None:
    (ctx.workspace / "latin.txt").write_bytes(b"caf\xe9\nold\n")
    change = preview_edit("latin.txt", "old", "new", False, ctx)
    assert " caf\\xe9" in change.diff
    json.dumps(change.diff)  # no lone surrogates left: printable and encodable


def test_a_new_file_shows_its_first_lines_and_size(ctx: RuntimeContext) -> None:
    content = "".join(f"row {n}\n" for n in range(50))
    change = preview_write("new/file.txt", content, ctx)
    assert change.action == "create" and not (ctx.workspace / "new").exists()
    assert change.diff[0] == "+row 0" and len(change.diff) == 20
    assert (change.new_lines, change.more_lines, change.new_bytes) == (50, 30, len(content))


def test_overwriting_shows_a_diff_against_the_file(ctx: RuntimeContext, source: Path) -> None:
    change = preview_write("notes.txt", SOURCE.replace("line 2\n", ""), ctx)
    assert change.action == "overwrite" and (change.added, change.removed) == (0, 1)
    assert "-line 2" in change.diff
    same = preview_write("notes.txt", SOURCE, ctx)
    assert same.diff == [] and any("nothing changes" in note for note in same.notes)


def test_line_end_changes_and_binary_files_are_said_not_diffed(ctx: RuntimeContext) -> None:
    (ctx.workspace / "w.txt").write_bytes(b"a\r\nb\r\n")
    change = preview_write("w.txt", "a\nb\n", ctx)
    assert change.diff == [] and any("CRLF to LF" in note for note in change.notes)
    (ctx.workspace / "img.bin").write_bytes(b"\x89PNG\x00\x00data")
    binary = preview_write("img.bin", "text now\n", ctx)
    assert binary.exact and any("binary" in note for note in binary.notes) and binary.diff == []


def test_only_the_builtin_tools_are_previewed(ctx: RuntimeContext, tmp_path: Path, source: Path) -> None:
    (tmp_path / "my.yaml").write_text(
        "name: edit_notes\ndescription: Edit.\nrisk: write\nparameters:\n  type: object\n"
        "  properties: {path: {type: string}}\n  required: [path]\ncommand: [touch, '{path}']\n")
    tools, problems = load_tools([BUILTIN_DIR / "edit_file.yaml", BUILTIN_DIR / "bash.yaml", tmp_path / "my.yaml"])
    assert problems == []
    executor = Executor(Registry(tools), ctx)

    def prepared(name: str, arguments: dict) -> PreparedToolCall:
        call = executor.prepare(name, json.dumps(arguments))
        assert isinstance(call, PreparedToolCall), call
        return call

    change = preview_call(prepared("edit_file", {"path": "notes.txt", "old_text": "line 1\n", "new_text": "one\n"}))
    assert isinstance(change, FileChange) and change.counts == "+1 -1"
    assert preview_call(prepared("bash", {"command": "true"})) is None
    assert preview_call(prepared("edit_notes", {"path": "x"})) is None
