"""Which AGENTS.md files a run reads (config/instructions.py): from the project's root down to the working
folder, never above the root, never where the walk of trust does not go; and trust lists them all."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.config.instructions import instruction_files, project_instruction_files, read_instructions
from tests.helpers import write


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
