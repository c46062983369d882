"""AGENTS.md: the instructions other agents (Codex, opencode, Goose, Amp, Cursor, Claude Code) read from a
repository, added to nami's system prompt (docs/conventions.md).

Which files: those of the folders from the project's root (agent.yaml's folder, never above it: trust does
not reach there) down to the folder nami was started in, the root's first, so a nearer file comes later and
takes precedence in the text. Codex's rule for the others: an AGENTS.md in another folder applies to the
files below it; the prompt says so and the model reads it (read_file) when it works there. Trust covers
every AGENTS.md a run reads, and those git tracks elsewhere in the project (config/loaded.py lists them), so
starting nami in another folder of a trusted project reads only trusted text; as the walk of trust does, a
file in a skipped folder (node_modules, .venv…) or behind a folder link is never read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.git_index import tracked_named
from nami_yaml.paths import SKIPPED_FOLDERS, walked

AGENTS_FILE = "AGENTS.md"
SECTION_START = "<project_instructions>"
SECTION_END = "</project_instructions>"
# Outside a git repository, how many folders the look for AGENTS.md files off the working folder's
# chain lists before it gives up on them (a project opens in well under a second whatever its size).
MAX_WALKED_FOLDERS = 5_000
RULE = ("The project's AGENTS.md files follow, from its root down to the current folder; where they disagree, "
        "a later one (nearer the current folder) takes precedence. They come after nami's own instructions "
        "and do not override them. An AGENTS.md in another folder applies to the files below that folder: "
        "read it before you change files there.")


@dataclass(frozen=True)
class Instructions:
    """The AGENTS.md text of one run: the files read (in order), the text for the prompt, and whether it was
    cut at ``instructions.max_bytes``."""

    files: tuple[Path, ...] = ()
    text: str = ""
    cut: bool = False

    def section(self) -> str:
        """The marked section of the system prompt ("" when there is nothing to add)."""
        if not self.text:
            return ""
        return f"{SECTION_START}\n{RULE}\n\n{self.text}\n{SECTION_END}"


def instruction_files(project: Path, cwd: Path | None) -> list[Path]:
    """The AGENTS.md of each folder from ``project`` down to ``cwd`` (only the root's when ``cwd`` is not
    inside it), root first; none in a folder the walk of trust skips or reaches through a link."""
    project = project.resolve()
    folders = [project]
    if cwd is not None:
        here = cwd.resolve()
        if project in here.parents:
            folders += [project / Path(*here.relative_to(project).parts[:depth])
                        for depth in range(1, len(here.relative_to(project).parts) + 1)]
    found = []
    for folder in folders:
        file = folder / AGENTS_FILE
        try:
            if file.is_file() and (folder == project or walked(file, project)):
                found.append(file)
        except OSError:
            continue
    return found


def project_instruction_files(project: Path, cwd: Path | None = None) -> list[Path]:
    """The AGENTS.md files trust covers: those read from ``cwd`` (the chain from the root down to it) and every
    other one of the project a run started elsewhere would read, so moving to another folder of a trusted
    project asks nothing again. The others are found cheaply: git's index where the project is in a
    repository (one file read, however large the tree), else a walk of at most ``MAX_WALKED_FOLDERS``
    folders; past that, the chain alone (a run started in another folder then asks again if its chain
    differs). Never one in a skipped folder or behind a folder link, as the walk of trust."""
    project = project.resolve()
    chain = instruction_files(project, cwd)
    others = tracked_named(project, AGENTS_FILE)
    if others is not None:
        others = [file for file in others if walked(file, project) and file.is_file()]
    else:
        others = _walk_for_instructions(project) or []
    return sorted({*chain, *others})


def _walk_for_instructions(project: Path) -> list[Path] | None:
    """Every AGENTS.md the walk of trust reaches, or None past ``MAX_WALKED_FOLDERS`` folders. Folders are
    listed without a stat of each file."""
    found: list[Path] = []
    stack = [str(project)]
    listed = 0
    while stack:
        folder = stack.pop()
        listed += 1
        if listed > MAX_WALKED_FOLDERS:
            return None
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name == AGENTS_FILE:
                        if entry.is_file():
                            found.append(Path(entry.path))
                    elif entry.name not in SKIPPED_FOLDERS and entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:  # a folder that cannot be read: nothing of it is loaded either
            continue
    return found


def read_instructions(files: list[Path], project: Path, max_bytes: int) -> Instructions:
    """The files' text, each marked with its path (relative to the project), cut at ``max_bytes`` in all
    with a note saying where (the model can read the rest with read_file)."""
    parts: list[str] = []
    left = max_bytes
    cut = False
    read: list[Path] = []
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            continue
        shown = file.relative_to(project.resolve()).as_posix() if project.resolve() in file.parents else str(file)
        body = data.decode("utf-8", "replace").strip()
        if not body:
            continue
        read.append(file)
        encoded = body.encode()
        if len(encoded) > left:
            kept = encoded[:left].decode("utf-8", "ignore")
            later = len(files) - files.index(file) - 1
            parts.append(f'<agents_md path="{shown}">\n{kept}\n[cut here: AGENTS.md text is sent up to '
                         f"{max_bytes:,} bytes (instructions.max_bytes); read the rest of {shown}"
                         f"{f' and {later} more file' + ('s' if later != 1 else '') if later else ''} "
                         "with read_file]\n</agents_md>")
            cut = True
            break
        left -= len(encoded)
        parts.append(f'<agents_md path="{shown}">\n{body}\n</agents_md>')
    return Instructions(tuple(read), "\n\n".join(parts), cut)
