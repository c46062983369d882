"""The workspace boundary, exercised with real files and real symlinks, through the real tools."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nami_yaml.builtins import files, search
from nami_yaml.builtins.workspace import display_path, is_within, resolve_path
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


def snapshot(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_is_within_compares_components_not_prefixes() -> None:
    assert is_within("/srv/app/x", "/srv/app")
    assert is_within("/srv/app", "/srv/app")
    assert not is_within("/srv/app2/x", "/srv/app")
    assert not is_within("/srv", "/srv/app")


def test_relative_and_absolute_paths_inside_resolve(ctx: RuntimeContext) -> None:
    (ctx.workspace / "src").mkdir()
    (ctx.workspace / "src" / "a.py").write_text("x = 1\n")
    assert resolve_path(ctx, "src/a.py") == ctx.workspace / "src" / "a.py"
    assert resolve_path(ctx, str(ctx.workspace / "src" / "a.py")) == ctx.workspace / "src" / "a.py"
    assert resolve_path(ctx, "src/../src/./a.py") == ctx.workspace / "src" / "a.py"
    assert resolve_path(ctx, "new/deeper/file.txt", write=True) == ctx.workspace / "new" / "deeper" / "file.txt"
    assert display_path(ctx, ctx.workspace / "src" / "a.py") == "src/a.py"
    assert display_path(ctx, ctx.workspace) == "."


@pytest.mark.parametrize("write", [False, True])
def test_dotdot_escape_is_refused_and_names_path_and_root(ctx: RuntimeContext, outside: Path, write: bool) -> None:
    with pytest.raises(ToolError) as err:
        resolve_path(ctx, "../outside/secret.txt", write=write)
    message = str(err.value)
    assert "../outside/secret.txt" in message
    assert str(ctx.workspace) in message
    assert "outside the workspace" in message


def test_absolute_path_outside_is_refused(ctx: RuntimeContext, outside: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read_file(str(outside / "secret.txt"), ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file(str(outside / "new.txt"), "x", ctx=ctx)
    assert not (outside / "new.txt").exists()


def test_symlinked_file_pointing_outside_is_refused_for_read_write_and_edit(
        ctx: RuntimeContext, outside: Path) -> None:
    (ctx.workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="resolves to"):
        files.read_file("link.txt", ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file("link.txt", "pwned\n", ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.edit_file("link.txt", "top", "pwned", ctx=ctx)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (ctx.workspace / "link.txt").is_symlink()


def test_symlinked_dir_pointing_outside_is_refused(ctx: RuntimeContext, outside: Path) -> None:
    (ctx.workspace / "data").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read_file("data/secret.txt", ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.list_dir("data", ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        search.grep("secret", path="data", ctx=ctx)
    # Walking the workspace does not follow the link either.
    assert "No matches" in search.grep("top secret", ctx=ctx).content
    assert "No files match" in search.glob("secret.txt", ctx=ctx).content


def test_new_file_under_symlinked_dir_creates_nothing_outside(ctx: RuntimeContext, outside: Path) -> None:
    (ctx.workspace / "data").symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file("data/new/deeper/file.txt", "x", ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file("data/file.txt", "x", ctx=ctx)
    assert snapshot(outside) == before


def test_sibling_with_common_prefix_is_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    sibling = tmp_path / "root2"
    root.mkdir()
    sibling.mkdir()
    (sibling / "x.txt").write_text("sibling\n")
    ctx = RuntimeContext(workspace=root, spill_dir=tmp_path / "spill")
    for path in (str(sibling / "x.txt"), "../root2/x.txt"):
        with pytest.raises(ToolError, match="outside the workspace"):
            files.read_file(path, ctx=ctx)
        with pytest.raises(ToolError, match="outside the workspace"):
            files.write_file(path, "changed", ctx=ctx)
    assert (sibling / "x.txt").read_text() == "sibling\n"


def test_dotdot_after_missing_folder_is_refused_before_anything_is_created(ctx: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        files.write_file("missing/../../escape.txt", "x", ctx=ctx)
    assert not (ctx.workspace / "missing").exists()
    assert not (ctx.workspace.parent / "escape.txt").exists()


def test_dangling_symlink_to_outside_is_refused_for_writing(ctx: RuntimeContext, outside: Path) -> None:
    (ctx.workspace / "dangling").symlink_to(outside / "not-yet.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file("dangling", "x", ctx=ctx)
    assert not (outside / "not-yet.txt").exists()


def test_symlink_inside_the_workspace_is_fine(ctx: RuntimeContext) -> None:
    (ctx.workspace / "real.txt").write_text("hello\n")
    (ctx.workspace / "alias.txt").symlink_to("real.txt")
    assert "hello" in files.read_file("alias.txt", ctx=ctx).content
    files.edit_file("alias.txt", "hello", "bye", ctx=ctx)
    # The edit lands in the real file; the link stays a link.
    assert (ctx.workspace / "real.txt").read_text() == "bye\n"
    assert (ctx.workspace / "alias.txt").is_symlink()


def test_nul_bytes_and_empty_paths_are_refused(ctx: RuntimeContext) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve_path(ctx, "a\x00b")
    with pytest.raises(ToolError, match="empty"):
        resolve_path(ctx, "")


def test_tilde_is_not_expanded(ctx: RuntimeContext, temp_home: Path) -> None:
    (temp_home / "notes.txt").write_text("home file\n")
    assert resolve_path(ctx, "~/notes.txt") == ctx.workspace / "~" / "notes.txt"
    with pytest.raises(ToolError, match="not expanded"):
        files.read_file("~/notes.txt", ctx=ctx)


def test_spill_dir_is_readable_but_not_writable(ctx: RuntimeContext) -> None:
    ctx.spill_dir.mkdir(parents=True)
    spilled = ctx.spill_dir / "out-123.txt"
    spilled.write_text("full output line\n")
    assert "full output line" in files.read_file(str(spilled), ctx=ctx).content
    assert "out-123.txt" in files.list_dir(str(ctx.spill_dir), ctx=ctx).content
    assert "full output line" in search.grep("full output", path=str(spilled), ctx=ctx).content
    with pytest.raises(ToolError, match="outside the workspace"):
        files.write_file(str(spilled), "overwritten", ctx=ctx)
    assert spilled.read_text() == "full output line\n"


def test_workspace_root_itself_may_be_reached_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real-root"
    real.mkdir()
    (real / "f.txt").write_text("inside\n")
    link = tmp_path / "link-root"
    link.symlink_to(real, target_is_directory=True)
    ctx = RuntimeContext(workspace=link, spill_dir=tmp_path / "spill")
    assert ctx.workspace == real
    assert "inside" in files.read_file(str(link / "f.txt"), ctx=ctx).content
    assert os.path.samefile(resolve_path(ctx, "f.txt"), real / "f.txt")


def test_a_symlink_planted_where_the_saved_output_folder_will_be_opens_nothing(ctx: RuntimeContext,
                                                                             tmp_path: Path) -> None:
    """The saved-output folder's path is told to the model in results; if it could plant a symlink there
    before nami creates it, every file the link reaches would become readable."""
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY\n")
    ctx.spill_dir.parent.mkdir(parents=True, exist_ok=True)
    ctx.spill_dir.symlink_to(outside, target_is_directory=True)
    for path in (str(ctx.spill_dir / "id_rsa"), str(outside / "id_rsa")):
        with pytest.raises(ToolError, match="outside the workspace"):
            files.read_file(path, ctx=ctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.list_dir(str(ctx.spill_dir), ctx=ctx)


def test_a_saved_output_folder_swapped_after_use_is_no_longer_readable(ctx: RuntimeContext,
                                                                       tmp_path: Path) -> None:
    ctx.spill_dir.mkdir(parents=True)
    (ctx.spill_dir / "out.txt").write_text("saved\n")
    assert "saved" in files.read_file(str(ctx.spill_dir / "out.txt"), ctx=ctx).content
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "out.txt").write_text("secret\n")
    ctx.spill_dir.rename(tmp_path / "moved-away")
    ctx.spill_dir.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read_file(str(ctx.spill_dir / "out.txt"), ctx=ctx)
    os.unlink(ctx.spill_dir)
    ctx.spill_dir.mkdir()  # a new real folder in its place is not the folder nami made either
    (ctx.spill_dir / "out.txt").write_text("planted\n")
    with pytest.raises(ToolError, match="outside the workspace"):
        files.read_file(str(ctx.spill_dir / "out.txt"), ctx=ctx)
