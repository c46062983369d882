"""What a repository's index lists (git_index.py), read by the real git through the runners' one subprocess
path: in the real bwrap (the home folder empty, credentials hidden), with the switches that keep a cloned
repository's configuration from running anything."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

import nami_yaml
from nami_yaml import git_index
from nami_yaml.git_index import GitCommand, submodule_paths, tracked_named, unquoted
from nami_yaml.runners import git_run
from tests.helpers import write
from tests.programs import need, need_bwrap

GIT_ENV = {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder, check=True,
                   capture_output=True, env={**GIT_ENV, "HOME": str(folder)})


def repository(folder: Path, *files: str) -> Path:
    """A repository at ``folder`` with ``files`` (each holding its own name) committed."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", ".")
    for name in files:
        write(folder / name, f"{name}\n")
    git(folder, "add", "-f", *files)
    git(folder, "commit", "-q", "-m", "files")
    return folder


def test_git_index_starts_no_process_of_its_own() -> None:
    """Its git commands are run by the runner the package gives it: the runners' one path, nothing beside."""
    tree = ast.parse(Path(git_index.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {"subprocess", "multiprocessing", "pty", "asyncio"}
    assert not any(isinstance(node, ast.Attribute) and node.attr in ("system", "popen", "execv", "execvp", "spawnv")
                   for node in ast.walk(tree))
    assert git_index._runner is nami_yaml._run_git


def test_the_listing_runs_in_the_sandbox_where_credentials_are_hidden(
        tmp_path: Path, temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A linked worktree's repository is read where the sandbox shows it (a project under the emptied home:
    its git folders are shown read-only), and not where the sandbox hides it (~/.ssh): the process git runs
    in sees what a sandboxed tool sees."""
    need("git")
    need_bwrap()
    for parent, work in ((temp_home / "src", tmp_path / "shown"), (temp_home / ".ssh", tmp_path / "hidden")):
        main = repository(parent / "main", "AGENTS.md", "a/AGENTS.md")
        git(main, "worktree", "add", "-q", str(work))
    assert tracked_named(tmp_path / "shown", "AGENTS.md") == [tmp_path / "shown" / "AGENTS.md",
                                                             tmp_path / "shown" / "a" / "AGENTS.md"]
    assert tracked_named(tmp_path / "hidden", "AGENTS.md") is None  # its repository is in ~/.ssh
    monkeypatch.setattr(git_index, "_runner", run_unsandboxed)
    assert tracked_named(tmp_path / "hidden", "AGENTS.md") is not None  # the same command run as it is reads it


def run_unsandboxed(command: GitCommand) -> str | None:
    """``command`` as git_index builds it, run directly: what its switches do on their own."""
    done = subprocess.run(command.argv, cwd=command.cwd, env={"PATH": os.environ["PATH"], **command.env},
                          capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def cloned_with_live_configuration(folder: Path, marker: Path) -> Path:
    """A repository whose configuration runs ``touch marker`` from git's fsmonitor, pager, hooks and a filter
    driver, with a submodule (a gitlink) and a tracked AGENTS.md."""
    repository(folder, "AGENTS.md", "data.txt")
    git(folder, "update-index", "--add", "--cacheinfo", "160000,0123456789abcdef0123456789abcdef01234567,vendor/lib")
    hooks = folder / "hooks"
    for hook in ("post-index-change", "pre-commit", "post-checkout"):
        write(hooks / hook, f"#!/bin/sh\ntouch {marker}\n").chmod(0o755)
    write(folder / "monitor.sh", f"#!/bin/sh\ntouch {marker}\n").chmod(0o755)
    write(folder / ".gitattributes", "* filter=evil\n")
    for key, value in (("core.fsmonitor", str(folder / "monitor.sh")), ("core.pager", f"touch {marker}"),
                       ("core.hooksPath", str(hooks)), ("filter.evil.clean", f"touch {marker}"),
                       ("filter.evil.smudge", f"touch {marker}"), ("filter.evil.process", f"touch {marker}")):
        git(folder, "config", key, value)
    return folder


def test_a_cloned_repositorys_configuration_stays_inert(tmp_path: Path, temp_home: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    need("git")
    marker = tmp_path / "RAN"
    folder = cloned_with_live_configuration(tmp_path / "clone", marker)
    # The configuration is live: git's own listing, without the switches, runs the fsmonitor.
    subprocess.run(["git", "ls-files"], cwd=folder, env={**GIT_ENV, "HOME": os.devnull}, capture_output=True,
                   check=False)
    assert marker.exists()
    marker.unlink()
    for runner in (git_index._runner, run_unsandboxed):  # the runners' path; the switches on their own
        monkeypatch.setattr(git_index, "_runner", runner)
        assert tracked_named(folder, "AGENTS.md") == [folder / "AGENTS.md"]
        assert submodule_paths(folder / ".git") == ["vendor/lib"]
        assert not marker.exists(), runner


def test_names_git_quotes_come_back_as_the_file_system_spells_them(tmp_path: Path) -> None:
    need("git")
    names = ["é/AGENTS.md", "tab\there/AGENTS.md", 'quote"d/AGENTS.md', "new\nline/AGENTS.md"]
    folder = repository(tmp_path / "repo", "AGENTS.md", *names)
    not_utf8 = os.fsdecode(b"latin\xe9")
    write(folder / not_utf8 / "AGENTS.md", "x\n")
    git(folder, "add", "--", f"{not_utf8}/AGENTS.md")
    listed = tracked_named(folder, "AGENTS.md")
    assert listed is not None and sorted(listed) == sorted(folder / name for name in
                                                           ["AGENTS.md", *names, f"{not_utf8}/AGENTS.md"])
    assert all(path.is_file() for path in listed)
    assert unquoted('"a\\\\b\\"c\\303\\251"') == 'a\\b"cé'
    assert unquoted('"odd\\q"') == "odd\\q"  # not git's quoting: kept as it is


def test_a_listing_longer_than_its_bound_is_no_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("git")
    folder = repository(tmp_path / "repo", "AGENTS.md", *(f"folder{n}/AGENTS.md" for n in range(40)))
    monkeypatch.setattr(git_run, "MAX_LISTING_BYTES", 200)
    assert tracked_named(folder, "AGENTS.md") is None  # the caller walks instead of trusting half a list
