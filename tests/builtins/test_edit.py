"""edit_file: exact unique matches, helpful failures that never touch the file, preserved file format."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nami_yaml.builtins import files
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

SOURCE = """def greet(name):
    message = "hello " + name
    return message


def main():
    print(greet("world"))
"""


@pytest.fixture
def source(ctx: RuntimeContext) -> Path:
    path = ctx.workspace / "app.py"
    path.write_text(SOURCE)
    return path


def failed_edit(ctx: RuntimeContext, path: Path, old: str, new: str, **kwargs: bool) -> str:
    """Run an edit that must fail; prove the file's bytes and mtime are unchanged; return the error."""
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(ToolError) as err:
        files.edit_file(path.name, old, new, ctx=ctx, **kwargs)
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(files.TEMP_PREFIX)] == []
    return str(err.value)


def test_unique_edit_applies_and_returns_a_diff(ctx: RuntimeContext, source: Path) -> None:
    result = files.edit_file("app.py", 'message = "hello " + name', 'message = f"hi {name}"', ctx=ctx)
    assert result.ok
    assert source.read_text() == SOURCE.replace('"hello " + name', 'f"hi {name}"')
    assert result.content.startswith("Edited app.py: replaced line 2.")
    assert '-    message = "hello " + name' in result.content
    assert '+    message = f"hi {name}"' in result.content
    assert "--- a/app.py" in result.content and "+++ b/app.py" in result.content
    assert result.details["lines"] == [2]


def test_ambiguous_edit_reports_count_and_lines(ctx: RuntimeContext, source: Path) -> None:
    message = failed_edit(ctx, source, "message", "msg")
    assert "matches 2 times" in message
    assert "at lines 2, 3" in message
    assert "replace_all=true" in message


def test_replace_all_changes_every_occurrence(ctx: RuntimeContext, source: Path) -> None:
    result = files.edit_file("app.py", "message", "msg", replace_all=True, ctx=ctx)
    assert "replaced 2 places" in result.content
    assert "message" not in source.read_text()
    assert source.read_text().count("msg") == 2


def test_missing_text_shows_the_nearest_lines(ctx: RuntimeContext, source: Path) -> None:
    message = failed_edit(ctx, source, 'def greet(nme):\n    mesage = "hello " + name', "x")
    assert "old_text was not found in app.py" in message
    assert "most similar text" in message
    assert "lines 1-2" in message
    assert '     2\t    message = "hello " + name' in message


def test_whitespace_only_difference_is_spotted(ctx: RuntimeContext, source: Path) -> None:
    message = failed_edit(ctx, source, 'def main():\n  print(greet("world"))', "x")
    assert "match it when whitespace is ignored" in message
    assert "Lines 6-7" in message
    assert '     7\t    print(greet("world"))' in message


def test_line_number_prefixes_from_read_file_are_pointed_out(ctx: RuntimeContext, source: Path) -> None:
    message = failed_edit(ctx, source, "     6\tdef main():\n     7\t    print(x)", "x")
    assert "line-number prefixes" in message


def test_nothing_similar(ctx: RuntimeContext, source: Path) -> None:
    message = failed_edit(ctx, source, "zzzz qqqq", "x")
    assert "Nothing similar was found" in message


def test_degenerate_requests_are_refused(ctx: RuntimeContext, source: Path) -> None:
    assert "empty" in failed_edit(ctx, source, "", "x")
    assert "identical" in failed_edit(ctx, source, "main", "main")
    with pytest.raises(ToolError, match="file not found"):
        files.edit_file("missing.py", "a", "b", ctx=ctx)
    assert not (ctx.workspace / "missing.py").exists()


def test_read_only_file_is_refused_untouched(ctx: RuntimeContext, source: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A rename would replace it whatever its mode, so edit_file asks os.access first. As root access()
    always says yes, so there the answer for this file is faked."""
    source.chmod(0o444)
    if os.geteuid() == 0:
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
            not (mode & os.W_OK and Path(path) == source) and real_access(path, mode, **kw)))
    assert "app.py is read-only (no write permission); refusing to replace it" in failed_edit(
        ctx, source, "message", "msg")
    assert stat.S_IMODE(source.stat().st_mode) == 0o444


def test_binary_file_is_refused_untouched(ctx: RuntimeContext) -> None:
    blob = ctx.workspace / "blob.bin"
    blob.write_bytes(b"abc\x00def")
    assert "binary" in failed_edit(ctx, blob, "abc", "xyz")


def test_crlf_bom_and_mode_are_preserved(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "deploy.sh"
    path.write_bytes(b"\xef\xbb\xbf#!/bin/sh\r\necho one\r\necho two\r\n")
    path.chmod(0o755)
    result = files.edit_file("deploy.sh", "echo one\necho two", "echo 1\necho 2\necho 3", ctx=ctx)
    assert result.ok
    assert path.read_bytes() == b"\xef\xbb\xbf#!/bin/sh\r\necho 1\r\necho 2\r\necho 3\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert "\r" not in result.content  # the diff is shown in the model's LF form


def test_crlf_text_sent_by_the_model_also_matches(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "win.txt"
    path.write_bytes(b"a\r\nb\r\nc\r\n")
    files.edit_file("win.txt", "a\r\nb", "A\r\nB", ctx=ctx)
    assert path.read_bytes() == b"A\r\nB\r\nc\r\n"


def test_mixed_line_endings_are_kept_as_they_are(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "mixed.txt"
    path.write_bytes(b"one\ntwo\r\nthree\r\nfour\n")
    files.edit_file("mixed.txt", "two\nthree", "2\n3", ctx=ctx)
    assert path.read_bytes() == b"one\n2\r\n3\r\nfour\n"
    files.edit_file("mixed.txt", "one", "1", ctx=ctx)
    assert path.read_bytes() == b"1\n2\r\n3\r\nfour\n"


def test_non_utf8_bytes_elsewhere_survive_an_edit(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "latin1.txt"
    path.write_bytes(b"caf\xe9\nname = old\n\xff\xfe end\n")
    files.edit_file("latin1.txt", "name = old", "name = new", ctx=ctx)
    assert path.read_bytes() == b"caf\xe9\nname = new\n\xff\xfe end\n"


def test_deleting_text_with_empty_new_text(ctx: RuntimeContext, source: Path) -> None:
    files.edit_file("app.py", "\n\ndef main():\n    print(greet(\"world\"))\n", "", ctx=ctx)
    assert source.read_text() == 'def greet(name):\n    message = "hello " + name\n    return message\n'


def test_long_diffs_are_capped(ctx: RuntimeContext) -> None:
    path = ctx.workspace / "many.txt"
    path.write_text("".join(f"row {i}\n" for i in range(300)))
    result = files.edit_file("many.txt", "row", "ROW", replace_all=True, ctx=ctx)
    assert "more diff lines]" in result.content
    assert len(result.content.splitlines()) < 100
    assert path.read_text().count("ROW") == 300
