"""A task's fresh workspace: empty, a copy of a folder, or a clone of a git repository at a ref."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nami_yaml.batch.workspace import (
    WorkspaceError,
    command_env,
    command_sandbox,
    make_workspace,
    run_command,
)
from nami_yaml.runtime import RuntimeContext
from tests.programs import need


def make(spec: object, base: Path, scratch: Path) -> Path:
    return make_workspace("t1", spec, base, scratch=scratch, env=os.environ, timeout=60)


def test_no_workspace_is_an_empty_folder_of_its_own(tmp_path: Path) -> None:
    first, second = make(None, tmp_path, tmp_path), make(None, tmp_path, tmp_path)
    assert first != second and list(first.iterdir()) == [] and first.name.startswith("nami-task-t1-")


def test_a_folder_is_copied_and_the_copy_is_the_tasks_alone(tmp_path: Path) -> None:
    source = tmp_path / "fixture"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "f.txt").write_text("original")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    (source / "outside").symlink_to("/etc")
    copy = make("fixture", tmp_path, tmp_path)
    assert (copy / "sub" / "f.txt").read_text() == "original"
    assert os.access(copy / "run.sh", os.X_OK)
    assert (copy / "outside").is_symlink()  # kept a link, not the outside copied in
    (copy / "sub" / "f.txt").write_text("changed")
    assert (source / "sub" / "f.txt").read_text() == "original"
    assert (make({"path": str(source)}, Path("/"), tmp_path) / "sub" / "f.txt").read_text() == "original"


def test_a_missing_folder_is_a_workspace_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        make("nope", tmp_path, tmp_path)
    assert list(tmp_path.glob("nami-task-*")) == []  # nothing half-made left behind


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    need("git")
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("config", "user.email", "t@example.com", cwd=repo)
    git("config", "user.name", "t", cwd=repo)
    (repo / "version.txt").write_text("1\n")
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "one", cwd=repo)
    git("tag", "v1", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    (repo / "version.txt").write_text("feature\n")
    git("commit", "-q", "-am", "feature", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    (repo / "version.txt").write_text("2\n")
    git("commit", "-q", "-am", "two", cwd=repo)
    return repo


@pytest.mark.parametrize(("ref", "version"), [(None, "2"), ("v1", "1"), ("feature", "feature"), ("main~1", "1")])
def test_a_git_repository_is_cloned_at_its_ref(repository: Path, tmp_path: Path, ref: str | None,
                                               version: str) -> None:
    spec = {"git": "repo", **({"ref": ref} if ref else {})}
    clone = make(spec, tmp_path, tmp_path)
    assert (clone / "version.txt").read_text().strip() == version
    assert git("status", "--porcelain", cwd=clone) == ""
    (clone / "version.txt").write_text("mine")
    assert (repository / "version.txt").read_text() == "2\n"  # the source is untouched


def test_an_unknown_ref_is_a_workspace_error(repository: Path, tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="cannot check out nope of repo"):
        make({"git": "repo", "ref": "nope"}, tmp_path, tmp_path)


def test_commands_get_a_scrubbed_environment_with_the_tasks_own_variables(tmp_path: Path) -> None:
    context = RuntimeContext(tmp_path, host_env={"PATH": os.environ["PATH"], "MY_API_KEY": "secret"})
    env = command_env(context, {"GREETING": "hi"})
    sandbox = command_sandbox(context, setup=True)
    run = run_command('echo "$GREETING ${MY_API_KEY:-none}"', tmp_path, env, 10, sandbox=sandbox)
    assert run.ok and run.result.stdout.strip() == "hi none"
    failed = run_command(["sh", "-c", "echo oops >&2; exit 4"], tmp_path, env, 10, sandbox=sandbox)
    assert not failed.ok
    assert failed.describe() == "`sh -c echo oops >&2; exit 4`: exit code 4\n[stderr]\noops\n[exit code: 4]"
    slow = run_command("sleep 5", tmp_path, env, 0.3, sandbox=sandbox)
    assert slow.describe().startswith("`sleep 5`: timed out after 0.3 s")


def test_a_repository_or_ref_like_an_option_never_reaches_git_as_one(repository: Path, tmp_path: Path) -> None:
    """Refused in task files already; the workspace says so too rather than hand git an option."""
    marker = tmp_path / "pwned"
    with pytest.raises(WorkspaceError):
        make({"git": f"--upload-pack=touch {marker}"}, tmp_path, tmp_path)
    with pytest.raises(WorkspaceError, match="starts with '-'"):
        make({"git": "repo", "ref": "--orphan=x"}, tmp_path, tmp_path)
    assert not marker.exists()
