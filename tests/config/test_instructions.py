"""Which AGENTS.md files a run reads (config/instructions.py): from the project's root down to the working
folder, never above the root, never where the walk of trust does not go; and trust lists them all."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nami_yaml.config import instructions
from nami_yaml.config.instructions import instruction_files, project_instruction_files, read_instructions
from tests.helpers import write
from tests.programs import need


def tree(root: Path) -> Path:
    for folder in ("", "a", "a/b", "node_modules/pkg", "elsewhere"):
        write(root / folder / "AGENTS.md", f"rules of /{folder}\n")
    (root / "a" / "linked").symlink_to(root / "elsewhere", target_is_directory=True)
    write(root.parent / "AGENTS.md", "above the project\n")
    return root


def test_the_chain_from_the_root_down_to_the_working_folder(tmp_path: Path) -> None:
    root = tree(tmp_path / "project")
    assert instruction_files(root, root / "a" / "b" / "deeper") == [root / "AGENTS.md", root / "a" / "AGENTS.md",
                                                                     root / "a" / "b" / "AGENTS.md"]
    assert instruction_files(root, tmp_path) == [root / "AGENTS.md"]  # started above it: the root's only
    assert instruction_files(root, root / "node_modules" / "pkg") == [root / "AGENTS.md"]
    # Through a folder link the working folder is where the link leads, and read from there.
    assert instruction_files(root, root / "a" / "linked") == [root / "AGENTS.md", root / "elsewhere" / "AGENTS.md"]


def test_trust_lists_every_agents_md_the_walk_reaches(tmp_path: Path) -> None:
    root = tree(tmp_path / "project")
    assert project_instruction_files(root) == [root / "AGENTS.md", root / "a" / "AGENTS.md",
                                               root / "a" / "b" / "AGENTS.md", root / "elsewhere" / "AGENTS.md"]


def test_the_text_is_cut_at_the_limit_on_a_character_boundary(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write(root / "AGENTS.md", "é" * 10)
    write(root / "a" / "AGENTS.md", "second\n")
    read = read_instructions([root / "AGENTS.md", root / "a" / "AGENTS.md"], root, 5)
    assert read.cut and read.files == (root / "AGENTS.md",)
    assert '<agents_md path="AGENTS.md">\néé\n[cut here: AGENTS.md text is sent up to 5 bytes' in read.text
    assert "read the rest of AGENTS.md and 1 more file with read_file" in read.text
    whole = read_instructions([root / "AGENTS.md", root / "a" / "AGENTS.md"], root, 100)
    assert not whole.cut and whole.text.index("é") < whole.text.index("second")


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=folder, check=True,
                   capture_output=True, env={"PATH": os.environ["PATH"], "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"})


def test_in_a_git_repository_trust_covers_the_tracked_files_and_the_chain_without_a_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("git")
    root = tree(tmp_path / "project")
    write(root / "node_modules" / "pkg" / "AGENTS.md", "committed with the dependencies\n")
    git(root, "init", "-q", ".")
    git(root, "add", "-f", "AGENTS.md", "a/b/AGENTS.md", "node_modules/pkg/AGENTS.md")
    git(root, "commit", "-q", "-m", "guides")
    (root / "a" / "b" / "AGENTS.md").unlink()  # tracked, but gone from the work tree: nothing to cover
    write(root / "a" / "b" / "AGENTS.md", "back\n")
    monkeypatch.setattr(instructions, "_walk_for_instructions", None)  # git's index is read: no walk at all
    # The untracked a/AGENTS.md is covered only from a folder whose chain reads it.
    assert project_instruction_files(root) == [root / "AGENTS.md", root / "a" / "b" / "AGENTS.md"]
    assert project_instruction_files(root, root / "a") == [root / "AGENTS.md", root / "a" / "AGENTS.md",
                                                           root / "a" / "b" / "AGENTS.md"]


def test_listing_a_cloned_repositorys_index_runs_none_of_its_configuration(tmp_path: Path) -> None:
    need("git")
    root = tree(tmp_path / "project")
    git(root, "init", "-q", ".")
    git(root, "add", "AGENTS.md")
    marker = tmp_path / "RAN"
    write(root / "monitor.sh", f"#!/bin/sh\ntouch {marker}\n").chmod(0o755)
    git(root, "config", "core.fsmonitor", str(root / "monitor.sh"))
    git(root, "config", "core.pager", f"touch {marker}")
    assert project_instruction_files(root) == [root / "AGENTS.md"]
    assert not marker.exists()


def test_outside_git_a_walk_too_large_covers_the_chain_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "project")
    monkeypatch.setattr(instructions, "MAX_WALKED_FOLDERS", 2)
    assert project_instruction_files(root) == [root / "AGENTS.md"]
    assert project_instruction_files(root, root / "a" / "b") == [root / "AGENTS.md", root / "a" / "AGENTS.md",
                                                                 root / "a" / "b" / "AGENTS.md"]
