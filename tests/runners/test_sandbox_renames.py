"""What a sandboxed call may not change, it cannot change by renaming the folder above it (issue 40, item
1): the read-only mounts of .git's config and hooks and of a trusted tool's folder moved along with their
folder, so a call could put a folder of its own in their place. On the real bubblewrap."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.runners.sandbox.plan import plan_for
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxNeeds
from nami_yaml.sensitive_paths import ProtectedPaths
from tests.sandboxing import need_bwrap


@pytest.fixture(autouse=True)
def bwrap() -> None:
    need_bwrap()


def repository(workspace: Path) -> Path:
    git = workspace / ".git"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (git / "modules" / "lib").mkdir(parents=True)
    (git / "modules" / "lib" / "config").write_text("[core]\n")
    (git / "modules" / "lib" / "hooks").mkdir()
    return git


def guarded(ctx: RuntimeContext) -> RuntimeContext:
    scripts = ctx.workspace / "ops" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "report.py").write_text("print('trusted')\n")
    return replace(ctx, protected_paths=ProtectedPaths.build(folders=[(scripts, "a tool folder")]))


def test_renaming_the_folders_above_protected_paths_fails(ctx: RuntimeContext) -> None:
    git = repository(ctx.workspace)
    config = (git / "config").read_text()
    ctx = guarded(ctx)
    result = bash("mv .git .git-old; mv ops ops-old; mv ops/scripts ops/old; rm -rf .git/modules/lib; "
                  "mv .git/modules .git/old-modules; mkdir -p .git-new; echo ok > notes.txt; ls -a", ctx=ctx)
    assert (ctx.workspace / "notes.txt").read_text() == "ok\n"  # the call ran, and wrote the workspace
    assert (git / "config").read_text() == config
    assert (ctx.workspace / "ops" / "scripts" / "report.py").read_text() == "print('trusted')\n"
    assert (git / "modules" / "lib" / "config").read_text() == "[core]\n"
    assert not (ctx.workspace / ".git-old").exists() and not (ctx.workspace / "ops-old").exists()
    assert not (ctx.workspace / "ops" / "old").exists() and not (git / "old-modules").exists()
    assert "Device or resource busy" in result.content or "busy" in result.content.lower()


def test_git_keeps_working_while_what_it_runs_stays_read_only(ctx: RuntimeContext) -> None:
    git = repository(ctx.workspace)
    (ctx.workspace / "a.txt").write_text("a\n")
    result = bash("git add a.txt && git -c user.email=a@b -c user.name=a commit -qm one && git log --oneline | wc -l; "
                  "echo '[core] fsmonitor = x' >> .git/config; echo x > .git/modules/lib/config; "
                  "echo 'rm -rf ~' > .git/modules/lib/hooks/post-checkout", ctx=ctx)
    assert result.content.splitlines()[0].strip() == "1", result.content  # objects, refs and the index: written
    assert "fsmonitor" not in (git / "config").read_text()
    assert (git / "modules" / "lib" / "config").read_text() == "[core]\n"
    assert not (git / "modules" / "lib" / "hooks" / "post-checkout").exists()


def test_a_linked_worktrees_git_file_cannot_be_pointed_elsewhere(ctx: RuntimeContext, tmp_path: Path) -> None:
    (ctx.workspace / ".git").write_text("gitdir: /somewhere/.git/worktrees/w\n")
    bash("echo 'gitdir: /tmp/evil' > .git; mv .git .git-old", ctx=ctx)
    assert (ctx.workspace / ".git").read_text() == "gitdir: /somewhere/.git/worktrees/w\n"
    assert not (ctx.workspace / ".git-old").exists()


def test_the_plan_pins_each_folder_between_the_workspace_and_a_protected_path(ctx: RuntimeContext) -> None:
    repository(ctx.workspace)
    ctx = guarded(ctx)
    plan = plan_for(ctx, SandboxNeeds())
    workspace = ctx.workspace
    assert {workspace / ".git", workspace / "ops", workspace / ".git" / "modules",
            workspace / ".git" / "modules" / "lib"} <= set(plan.pinned)
    assert workspace not in plan.pinned  # the area itself is already its own mount
    assert {workspace / ".git" / "config", workspace / ".git" / "hooks", workspace / "ops" / "scripts",
            workspace / ".git" / "modules" / "lib" / "config"} <= set(plan.read_only)


def test_a_missing_hooks_folder_cannot_be_created(ctx: RuntimeContext) -> None:
    """Red team: with no .git/hooks (an empty init.templateDir), a call made one with a pre-commit."""
    git = repository(ctx.workspace)
    for hook in (git / "hooks").iterdir():
        hook.unlink()
    (git / "hooks").rmdir()
    bash("mkdir -p .git/hooks; echo 'id' > .git/hooks/pre-commit", ctx=ctx)
    assert not (git / "hooks" / "pre-commit").exists()


def test_a_submodule_named_refs_or_objects_is_covered_too(ctx: RuntimeContext) -> None:
    """Red team: a cloned repository names its own submodules; `refs` under .git/modules was skipped."""
    git = repository(ctx.workspace)
    for name in ("refs", "objects"):
        (git / "modules" / name).mkdir()
        (git / "modules" / name / "config").write_text("[core]\n")
    bash("echo '[core] fsmonitor = id' >> .git/modules/refs/config; "
         "echo '[core] fsmonitor = id' >> .git/modules/objects/config", ctx=ctx)
    assert (git / "modules" / "refs" / "config").read_text() == "[core]\n"
    assert (git / "modules" / "objects" / "config").read_text() == "[core]\n"


def test_a_git_folder_behind_a_link_is_protected_where_it_lies(ctx: RuntimeContext) -> None:
    """Red team: with .git a link (to repo.git in the workspace), its config was writable."""
    real = ctx.workspace / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(real)], check=True)
    (ctx.workspace / ".git").symlink_to(real)
    before = (real / "config").read_text()
    bash("echo '[core] fsmonitor = id' >> .git/config; echo '[core] fsmonitor = id' >> repo.git/config", ctx=ctx)
    assert (real / "config").read_text() == before


def test_planning_makes_no_folder_where_a_git_link_points_outside(ctx: RuntimeContext, tmp_path: Path) -> None:
    """The empty .git/hooks nami makes (to mount it read-only) is made only in the workspace's own
    repository: a .git link a call planted must not get nami, unsandboxed, to make folders elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "HEAD").write_text("ref: refs/heads/main\n")
    (ctx.workspace / ".git").symlink_to(elsewhere)
    plan_for(ctx, SandboxNeeds())
    assert not (elsewhere / "hooks").exists()


def test_a_repository_in_a_writable_area_is_guarded_as_the_workspaces(ctx: RuntimeContext, tmp_path: Path) -> None:
    """sandbox.writable: [other] with a repository in it: its .git/config and hooks are read-only, and its .git
    cannot be renamed away, while its objects, refs and index stay writable (a commit there works)."""
    other = tmp_path / "other"
    other.mkdir()
    git = repository(other)
    config = (git / "config").read_text()
    area = replace(ctx, sandbox=replace(ctx.sandbox, writable=(str(other),)))
    result = bash(f"cd {other} && echo b > b.txt && git add b.txt && git -c user.email=a@b -c user.name=a commit -qm one"
                  " && git log --oneline | wc -l; echo '[core] fsmonitor = x' >> .git/config; "
                  "echo x > .git/hooks/pre-commit; mv .git .git-old; echo done", ctx=area)
    assert result.content.splitlines()[0].strip() == "1", result.content
    assert (git / "config").read_text() == config and not (git / "hooks" / "pre-commit").exists()
    assert git.is_dir() and not (other / ".git-old").exists() and "done" in result.content
