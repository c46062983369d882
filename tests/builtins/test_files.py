"""read_file, write_file and list_dir on real files, including a real SIGKILL in the middle of a write."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from nami_yaml.builtins import files
from nami_yaml.errors import ToolError
from nami_yaml.registry.loader import load_tool_file
from nami_yaml.runtime import RuntimeContext, ToolSettings

# ---------------------------------------------------------------- read_file


def test_read_numbers_lines_like_cat_n(ctx: RuntimeContext) -> None:
    (ctx.workspace / "a.txt").write_text("alpha\nbeta\n\ngamma")
    result = files.read_file("a.txt", ctx=ctx)
    assert result.ok
    assert result.content == "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma"
    assert result.details["next_offset"] is None


def test_read_offset_and_limit_window(ctx: RuntimeContext) -> None:
    (ctx.workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = files.read_file("n.txt", offset=4, limit=3, ctx=ctx)
    assert result.content.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "Use offset=7 to continue" in result.content
    assert result.details["next_offset"] == 7
    tail = files.read_file("n.txt", offset=9, ctx=ctx)
    assert "    10\tline 10" in tail.content
    assert "line 10 is the last" in tail.content


def test_read_paginates_at_the_line_cap(ctx: RuntimeContext) -> None:
    (ctx.workspace / "long.txt").write_text("".join(f"{i}\n" for i in range(1, 5001)))
    first = files.read_file("long.txt", ctx=ctx)
    assert first.content.count("\n") == 2000  # 2000 lines + the note
    assert "Use offset=2001 to continue" in first.content
    second = files.read_file("long.txt", offset=2001, ctx=ctx)
    assert second.content.startswith("  2001\t2001")
    assert "Use offset=4001 to continue" in second.content


def test_read_paginates_at_the_byte_cap(ctx: RuntimeContext) -> None:
    (ctx.workspace / "wide.txt").write_text("".join(f"{i:04d} " + "x" * 994 + "\n" for i in range(500)))
    result = files.read_file("wide.txt", ctx=ctx)
    assert len(result.content.encode()) < 51_000
    next_offset = result.details["next_offset"]
    assert next_offset is not None and 10 < next_offset < 100
    assert f"Use offset={next_offset} to continue" in result.content
    follow = files.read_file("wide.txt", offset=next_offset, ctx=ctx)
    assert follow.content.startswith(f"{next_offset:>6}\t{next_offset - 1:04d} ")


def test_read_byte_cap_follows_a_smaller_max_output(workdir: Path, temp_home: Path) -> None:
    ctx = RuntimeContext(workspace=workdir, settings=ToolSettings(max_output=5_000), spill_dir=temp_home / "s")
    (workdir / "f.txt").write_text("".join(f"{i} " + "y" * 90 + "\n" for i in range(1000)))
    result = files.read_file("f.txt", ctx=ctx)
    assert len(result.content.encode()) <= 5_000
    assert "to continue" in result.content


def test_read_one_gigabyte_sparse_file_is_paginated_not_loaded(ctx: RuntimeContext) -> None:
    big = ctx.workspace / "big.log"
    with open(big, "wb") as f:
        f.write(b"".join(b"entry %d\n" % i for i in range(3000)))
        f.truncate(1 << 30)  # a hole of NUL bytes up to 1 GB, costing no disk
    # In a subprocess so its peak memory is its own and can be measured honestly.
    script = textwrap.dedent(f"""
        import json, resource, sys
        from pathlib import Path
        from nami_yaml.builtins import files
        from nami_yaml.runtime import RuntimeContext
        ctx = RuntimeContext(workspace=Path({str(ctx.workspace)!r}), spill_dir=Path({str(ctx.spill_dir)!r}))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        first = files.read_file("big.log", ctx=ctx)
        hole = files.read_file("big.log", offset=3000, ctx=ctx)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        json.dump([first.content[-200:], hole.content, after - before], sys.stdout)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    first_tail, hole, grown_kb = json.loads(out.stdout)
    assert "Use offset=2001 to continue" in first_tail
    assert "1,073,741,824 bytes" in first_tail
    assert "  3000\tentry 2999" in hole
    assert "binary data" in hole
    assert grown_kb < 50_000  # ru_maxrss is in KB on Linux: far below the 1 GB a full read would take


def test_read_binary_file_is_refused(ctx: RuntimeContext) -> None:
    (ctx.workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ToolError, match="binary"):
        files.read_file("img.png", ctx=ctx)


def test_read_directory_missing_and_special_files_are_clear_errors(ctx: RuntimeContext) -> None:
    (ctx.workspace / "sub").mkdir()
    with pytest.raises(ToolError, match="is a directory; use list_dir"):
        files.read_file("sub", ctx=ctx)
    with pytest.raises(ToolError, match="file not found: nope.txt"):
        files.read_file("nope.txt", ctx=ctx)
    os.mkfifo(ctx.workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        files.read_file("pipe", ctx=ctx)


def test_read_invalid_utf8_uses_replacement_characters(ctx: RuntimeContext) -> None:
    subprocess.run(["bash", "-c", r"printf '\xff\xfe' > bad.txt; printf 'ok \xe9t\xe9\n' >> bad.txt"],
                   cwd=ctx.workspace, check=True)
    result = files.read_file("bad.txt", ctx=ctx)
    assert result.ok
    assert "\ufffd\ufffdok \ufffdt\ufffd" in result.content


def test_read_cuts_very_long_lines(ctx: RuntimeContext) -> None:
    (ctx.workspace / "min.js").write_text("a" * 100_000 + "\nsecond\n")
    result = files.read_file("min.js", ctx=ctx)
    first, second = result.content.split("\n")
    assert first.startswith("     1\t" + "a" * 2000) and "line cut at 2000 characters" in first
    assert len(first) < 2100
    assert second == "     2\tsecond"


def test_read_hides_bom_and_crlf(ctx: RuntimeContext) -> None:
    (ctx.workspace / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert files.read_file("w.txt", ctx=ctx).content == "     1\tone\n     2\ttwo"


def test_read_empty_file_and_offset_past_end(ctx: RuntimeContext) -> None:
    (ctx.workspace / "empty.txt").write_text("")
    assert "is empty" in files.read_file("empty.txt", ctx=ctx).content
    (ctx.workspace / "three.txt").write_text("1\n2\n3\n")
    with pytest.raises(ToolError, match="offset 10 is past the end of three.txt, which has 3 lines"):
        files.read_file("three.txt", offset=10, ctx=ctx)


# ---------------------------------------------------------------- write_file


def test_write_creates_parents_and_reports(ctx: RuntimeContext) -> None:
    result = files.write_file("deep/er/new.txt", "hello\nworld\n", ctx=ctx)
    assert (ctx.workspace / "deep/er/new.txt").read_text() == "hello\nworld\n"
    assert result.content == "Created deep/er/new.txt (12 bytes, 2 lines)."
    again = files.write_file("deep/er/new.txt", "bye", ctx=ctx)
    assert again.content.startswith("Overwrote deep/er/new.txt (3 bytes, 1 line).")
    assert (ctx.workspace / "deep/er/new.txt").read_bytes() == b"bye"
    assert [p.name for p in (ctx.workspace / "deep/er").iterdir()] == ["new.txt"]  # no temp files left


def test_write_keeps_the_mode_of_an_existing_file(ctx: RuntimeContext) -> None:
    script = ctx.workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o750)
    files.write_file("run.sh", "#!/bin/sh\necho new\n", ctx=ctx)
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert subprocess.run([str(script)], capture_output=True, text=True).stdout == "new\n"


def test_new_file_mode_follows_the_umask(ctx: RuntimeContext) -> None:
    old = os.umask(0o027)
    try:
        files.write_file("fresh.txt", "x", ctx=ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((ctx.workspace / "fresh.txt").stat().st_mode) == 0o640


def test_write_refuses_to_replace_a_folder(ctx: RuntimeContext) -> None:
    (ctx.workspace / "dir").mkdir()
    with pytest.raises(ToolError, match="not a regular file"):
        files.write_file("dir", "x", ctx=ctx)
    assert (ctx.workspace / "dir").is_dir()


def test_failed_rename_leaves_old_file_and_no_temp(ctx: RuntimeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    target = ctx.workspace / "keep.txt"
    target.write_text("original\n")

    def broken_replace(src: object, dst: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.write_file("keep.txt", "replacement\n", ctx=ctx)
    assert target.read_text() == "original\n"
    assert [p.name for p in ctx.workspace.iterdir()] == ["keep.txt"]


def is_temp(path: Path) -> bool:
    return path.name.startswith(files.TEMP_PREFIX) and path.name.endswith(files.TEMP_SUFFIX)


def test_temp_name_is_short_so_any_valid_name_works(ctx: RuntimeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file's name does not grow with the target's: a 255-byte name (the usual limit)
    can be written and edited."""
    name = "n" * (os.pathconf(ctx.workspace, "PC_NAME_MAX") - 3) + ".md"
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(os.fspath(p)) or real_open(p, *a, **k))
    assert files.write_file(name, "one\n", ctx=ctx).ok
    assert files.edit_file(name, "one", "two", ctx=ctx).ok
    assert (ctx.workspace / name).read_text() == "two\n"
    temps = [Path(p).name for p in opened if is_temp(Path(p))]
    assert len(temps) == 2 and all(len(t) == len(".nami-") + 8 + len(".tmp") for t in temps)
    assert [p.name for p in ctx.workspace.iterdir()] == [name]


def refused_read_only(ctx: RuntimeContext, target: Path) -> None:
    """write_file and edit_file both refuse ``target`` and leave it as it was, with no temp file."""
    before, mode = target.read_bytes(), target.stat().st_mode
    with pytest.raises(ToolError, match=f"{target.name} is read-only .*refusing to replace it"):
        files.write_file(target.name, "replaced\n", ctx=ctx)
    with pytest.raises(ToolError, match=f"{target.name} is read-only .*refusing to replace it"):
        files.edit_file(target.name, "keep", "changed", ctx=ctx)
    assert target.read_bytes() == before and target.stat().st_mode == mode
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def test_read_only_file_is_refused(tmp_path: Path) -> None:
    """For real: in a child process that, when the tests run as root, first becomes `nobody` (root may
    write to any file, so os.access would say yes)."""
    import tempfile
    import traceback

    folder = Path(tempfile.mkdtemp(prefix="nami-readonly-"))  # under /tmp, which nobody can traverse
    try:
        folder.chmod(0o777)
        target = folder / "locked.txt"
        target.write_text("keep me\n")
        target.chmod(0o444)
        ctx = RuntimeContext(workspace=folder, spill_dir=folder / "spill")  # built before forking
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                refused_read_only(ctx, target)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        # A forked child of a threaded process could deadlock on a lock another thread held: never wait forever.
        deadline = time.monotonic() + 60
        while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the unprivileged child did not finish")
            time.sleep(0.02)
        assert os.waitstatus_to_exitcode(waited[1]) == 0
    finally:
        target.chmod(0o644)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def test_file_without_write_access_is_refused(ctx: RuntimeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check asks os.access, which answers for the real user (always yes for root, so it is faked
    here; the test above runs it for real when not root)."""
    target = ctx.workspace / "locked.txt"
    target.write_text("keep me\n")
    target.chmod(0o444)
    real_access = os.access
    asked: list[Path] = []

    def access(path: object, mode: int, **kwargs: object) -> bool:
        if Path(os.fspath(path)).name == target.name and mode & os.W_OK:  # type: ignore[arg-type]
            asked.append(target)
            return False
        return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    refused_read_only(ctx, target)
    assert asked
    # A writable file and a new one are still written.
    files.write_file("other.txt", "fine\n", ctx=ctx)
    assert (ctx.workspace / "other.txt").read_text() == "fine\n"


_CHILD_WRITER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from nami_yaml.builtins import files
    from nami_yaml.runtime import RuntimeContext

    if sys.argv[2] == "pause":
        def paused_fsync(fd):
            # The temp file is fully written but not yet renamed: tell the parent, then wait to be killed.
            sys.stdout.write("paused\\n")
            sys.stdout.flush()
            sys.stdin.readline()
        os.fsync = paused_fsync
    ctx = RuntimeContext(workspace=Path(sys.argv[1]), spill_dir=Path(sys.argv[1]) / ".spill")
    files.write_file("config.yaml", "new: value\\n" * 5_000_000, ctx=ctx)
""")


def test_sigkill_mid_write_leaves_the_old_file_intact(ctx: RuntimeContext) -> None:
    target = ctx.workspace / "config.yaml"
    target.write_text("old: value\n")
    child = subprocess.Popen([sys.executable, "-c", _CHILD_WRITER, str(ctx.workspace), "pause"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "paused\n"
        temps = [p for p in ctx.workspace.iterdir() if is_temp(p)]
        assert len(temps) == 1 and temps[0].stat().st_size == len("new: value\n") * 5_000_000
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert target.read_text() == "old: value\n"


def test_sigkill_at_an_arbitrary_moment_never_leaves_a_partial_file(ctx: RuntimeContext) -> None:
    target = ctx.workspace / "config.yaml"
    target.write_text("old: value\n")
    child = subprocess.Popen([sys.executable, "-c", _CHILD_WRITER, str(ctx.workspace), "run"])
    deadline = time.monotonic() + 60
    # Kill as soon as the temp file shows up: usually mid-write, and the invariant holds whenever it lands.
    while child.poll() is None and time.monotonic() < deadline:
        if any(is_temp(p) for p in ctx.workspace.iterdir()):
            break
        time.sleep(0.001)
    child.kill()
    child.wait(timeout=30)
    assert target.read_text() in ("old: value\n", "new: value\n" * 5_000_000)


# ---------------------------------------------------------------- list_dir


def test_list_dir_sorted_with_folder_marks_and_links(ctx: RuntimeContext) -> None:
    for name in ("b.txt", "a.txt", ".hidden"):
        (ctx.workspace / name).write_text("")
    (ctx.workspace / "src").mkdir()
    (ctx.workspace / "to-src").symlink_to("src", target_is_directory=True)
    result = files.list_dir(ctx=ctx)
    assert result.content.split("\n") == [".hidden", "a.txt", "b.txt", "src/", "to-src/ -> src"]
    assert files.list_dir("src", ctx=ctx).content == "(src is empty)"


def test_list_dir_caps_and_counts_the_rest(ctx: RuntimeContext) -> None:
    for i in range(520):
        (ctx.workspace / f"f{i:04d}").write_text("")
    for i in range(30):
        (ctx.workspace / f"z{i:02d}").mkdir()
    result = files.list_dir(".", ctx=ctx)
    lines = result.content.split("\n")
    assert len(lines) == 501
    assert lines[0] == "f0000" and lines[499] == "f0499"
    assert lines[-1].startswith("[50 more entries not shown (30 folders, 20 other)")
    assert result.details["omitted"] == 50


def test_list_dir_errors(ctx: RuntimeContext) -> None:
    (ctx.workspace / "f.txt").write_text("x")
    with pytest.raises(ToolError, match="is a file"):
        files.list_dir("f.txt", ctx=ctx)
    with pytest.raises(ToolError, match="folder not found"):
        files.list_dir("nowhere", ctx=ctx)



# ---------------------------------------------------------------- the YAML declarations


MINE = ["read_file", "write_file", "edit_file", "list_dir", "grep", "glob", "bash"]


@pytest.mark.parametrize("name", MINE)
def test_declaration_loads_and_matches_its_function(name: str) -> None:
    path = Path(files.__file__).parent / f"{name}.yaml"
    tools, problems = load_tool_file(path, builtin=True)
    assert problems == []
    assert [t.name for t in tools] == [name]
    raw = yaml.safe_load(path.read_text())
    module, function = raw["entrypoint"].split(":")
    signature = inspect.signature(getattr(importlib.import_module(module), function))
    params = raw["parameters"]
    assert set(params["properties"]) | {"ctx"} == set(signature.parameters)
    for optional in set(params["properties"]) - set(params.get("required", [])):
        assert signature.parameters[optional].default is not inspect.Parameter.empty
    assert raw["risk"] == {"bash": "exec", "write_file": "write", "edit_file": "write"}.get(name, "read")
