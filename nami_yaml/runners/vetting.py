"""Vetting what a project's Python MCP server imports, inside the server's own process.

Trust fingerprints a server's code folders (config/loaded.py), and nami checks before starting it that they
are still what was trusted. A Python server also imports as it runs, and may import from a folder trust
skips (``node_modules``) or a file the model wrote since it started. Where nami can read the command line
(``python [options] script.py ...``, ``-m module ...`` or ``-c CODE ...``, options nami knows), it starts
the server through runners/vetted_python.py instead, with a manifest of the trusted files' hashes: the
server imports from its code folders only those bytes. Another command line (``uv run``, ``node``) runs as
written; its folders are still fingerprinted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nami_yaml.shell.command_risks import PYTHON

BOOTSTRAP = Path(__file__).with_name("vetted_python.py")
CODE_SUFFIXES = frozenset({".py", ".pyw", ".pyc", ".pyo", ".so", ".pyd"})  # what Python imports
_FLAGS = frozenset("bBdEIOPqsSuv")  # options without a value that change nothing about what is imported
_VALUE_OPTIONS = frozenset({"-X", "-W"})


@dataclass(frozen=True)
class CodeVetting:
    """One server's code folders and the SHA-256 of each trusted code file in them."""

    project: str  # the agent.yaml, for messages
    folders: tuple[Path, ...] = ()
    files: Mapping[Path, str] = field(default_factory=dict)

    @classmethod
    def of(cls, project: Path, folders: Sequence[Path], hashes: Mapping[Path, str]) -> CodeVetting:
        def inside(file: Path) -> bool:
            return any(folder in file.parents for folder in folders)

        return cls(str(project), tuple(folders), {file: digest for file, digest in hashes.items()
                                                  if file.suffix in CODE_SUFFIXES and inside(file)})

    def launch(self, argv: Sequence[str], manifest: Path) -> list[str]:
        """``argv`` rewritten to start through the bootstrap (the manifest written to ``manifest``), or as
        given when it is not a Python command line nami can read."""
        parsed = python_command(argv)
        if parsed is None or not self.folders:
            return list(argv)
        options, mode, target, rest = parsed
        text = json.dumps({"project": self.project, "folders": [str(f) for f in self.folders],
                           "files": {str(path): digest for path, digest in self.files.items()}})
        temporary = manifest.with_name(f".{manifest.name}.{os.getpid()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        os.chmod(temporary, 0o600)
        os.replace(temporary, manifest)
        return [argv[0], *options, "-c", BOOTSTRAP.read_text(encoding="utf-8"), str(manifest), mode, target, *rest]


def python_command(argv: Sequence[str]) -> tuple[list[str], str, str, list[str]] | None:
    """``python [options] script ARGS``, ``python [options] -m module ARGS`` or ``python [options] -c CODE
    ARGS`` as (options, "script", "module" or "code", the script, module or code, ARGS); None for anything
    else (``-i``, stdin, an option nami does not know)."""
    if not argv or not PYTHON.fullmatch(os.path.basename(argv[0])):
        return None
    options: list[str] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in ("-m", "-c") and index + 1 < len(argv):
            return options, "module" if word == "-m" else "code", argv[index + 1], list(argv[index + 2:])
        if word in _VALUE_OPTIONS and index + 1 < len(argv):
            options += [word, argv[index + 1]]
            index += 2
            continue
        attached = word[:2] in _VALUE_OPTIONS and len(word) > 2  # -Xutf8, -Wignore
        if attached or (len(word) > 1 and word.startswith("-") and not word.startswith("--") and set(word[1:]) <= _FLAGS):
            options.append(word)
        elif word.startswith("-"):
            return None
        else:
            return options, "script", word, list(argv[index + 1:])
        index += 1
    return None
