"""A folder swapped for a symlink between the boundary check and the write cannot redirect the write.

A review landed 403 of ~38,000 writes outside the workspace by exchanging a folder with a symlink
(renameat2 RENAME_EXCHANGE) while write_file ran. The deterministic tests swap right after the check;
the last test races a real concurrent swapper.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.builtins import files, workspace
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext


@pytest.fixture
def stage(ctx: RuntimeContext, tmp_path: Path) -> tuple[Path, Path]:
    """`d` a real folder in the workspace, `outside` a folder beside it, `l` a link to `outside`."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside original\n")
    (ctx.workspace / "d").mkdir()
    (ctx.workspace / "d" / "f.txt").write_text("inside original\n")
    (ctx.workspace / "l").symlink_to(outside, target_is_directory=True)
    return ctx.workspace / "d", outside


def _swap_after_the_check(monkeypatch: pytest.MonkeyPatch, ctx: RuntimeContext) -> None:
    """Every boundary check is followed at once by another process swapping `d` and `l`."""
    real = workspace.resolve_path

    def check_then_swap(*args: Any, **kwargs: Any) -> Path:
        resolved = real(*args, **kwargs)
        os.rename(ctx.workspace / "d", ctx.workspace / "d.real")
        os.rename(ctx.workspace / "l", ctx.workspace / "d")
        return resolved

    monkeypatch.setattr(files, "resolve_path", check_then_swap)


def _outside_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert (outside / "f.txt").read_text() == "outside original\n"


@pytest.mark.parametrize("call", [
    lambda ctx: files.write_file("d/f.txt", "written\n", ctx=ctx),
    lambda ctx: files.write_file("d/new.txt", "written\n", ctx=ctx),
    lambda ctx: files.write_file("d/sub/new.txt", "written\n", ctx=ctx),
    lambda ctx: files.edit_file("d/f.txt", "original", "edited", ctx=ctx),
], ids=["overwrite", "create", "create-folder", "edit"])
def test_a_swap_after_the_check_cannot_redirect_a_write(ctx: RuntimeContext, stage: tuple[Path, Path],
                                                        monkeypatch: pytest.MonkeyPatch, call: Any) -> None:
    _, outside = stage
    _swap_after_the_check(monkeypatch, ctx)
    with pytest.raises(ToolError, match="changed while"):
        call(ctx)
    _outside_untouched(outside)


def test_a_swap_after_the_check_cannot_redirect_a_read(ctx: RuntimeContext, stage: tuple[Path, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _swap_after_the_check(monkeypatch, ctx)
    with pytest.raises(ToolError, match="changed while"):
        files.read_file("d/f.txt", ctx=ctx)


def test_symlinks_inside_the_workspace_still_work(ctx: RuntimeContext) -> None:
    (ctx.workspace / "real").mkdir()
    (ctx.workspace / "real" / "f.txt").write_text("one\n")
    (ctx.workspace / "alias").symlink_to(ctx.workspace / "real", target_is_directory=True)
    (ctx.workspace / "file-link.txt").symlink_to(ctx.workspace / "real" / "f.txt")
    files.write_file("alias/f.txt", "two\n", ctx=ctx)
    files.edit_file("file-link.txt", "two", "three", ctx=ctx)
    assert (ctx.workspace / "real" / "f.txt").read_text() == "three\n"
    assert (ctx.workspace / "file-link.txt").is_symlink()
    assert "three" in files.read_file("alias/f.txt", ctx=ctx).content


SWAPPER = textwrap.dedent("""
    import ctypes, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = (os.fsencode(p) for p in sys.argv[1:3])
    end = time.monotonic() + float(sys.argv[3])
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    while time.monotonic() < end:
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
""")


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "renameat2"), reason="renameat2 needs glibc 2.28 on Linux")
def test_a_concurrent_exchange_never_lands_a_write_outside(ctx: RuntimeContext, stage: tuple[Path, Path]) -> None:
    _, outside = stage
    seconds = 3.0
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ctx.workspace / "d"), str(ctx.workspace / "l"),
                                str(seconds)])
    attempts = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            attempts += 1
            # Refused because the folder changed, or resolved to the link's target: both fine.
            with contextlib.suppress(ToolError):
                files.write_file(f"d/n{attempts % 50}.txt", "x\n", ctx=ctx)
    finally:
        swapper.wait(timeout=30)
    assert attempts > 100
    _outside_untouched(outside)
