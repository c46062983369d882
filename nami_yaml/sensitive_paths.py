"""Paths where a write is code execution, so a write there needs the approval an ``exec`` call needs.

With ``write: allow`` and ``exec: ask``, a model could otherwise write ``tools/mod.py`` and then call a
``risk: read`` entry point (its code runs inside nami), or add ``core.fsmonitor`` to ``.git/config`` and
call a ``risk: read`` ``git status`` tool. What is protected:

- nami's own configuration and code: the agent.yaml in use and every config file read (the user config
  too, even before it exists), its prompt file, every tool file and the folders holding them (entry
  points import their Python from there), nami's state folder (the trust store) and config folder;
- folders whose content programs run: ``.git`` (hooks, ``core.fsmonitor``, ``core.hooksPath``) and any
  folder git takes for a repository (``HEAD``, ``objects/``, ``refs/``: a bare one, or one the model
  makes), ``.hg``, ``.vscode``, ``.idea`` and ``.devcontainer`` (tasks and settings an editor runs),
  ``.husky``, ``.cargo`` (``rustc-wrapper`` runs even for ``cargo metadata``), ``.mise``, ``.terraform``
  (providers), and the code a tool's interpreter loads: ``.venv``, ``site-packages``, ``dist-packages``,
  ``node_modules``;
- files programs run: ``.envrc`` (direnv), ``Makefile``/``makefile``/``GNUmakefile`` and included
  ``*.mk`` (even ``make -n`` runs ``$(shell ...)``), ``*.tf``/``*.tofu`` (``terraform plan``, a read tool
  of the library, runs ``data "external"`` programs), ``.pre-commit-config.yaml``, ``mise.toml`` and its
  variants, ``.yarnrc``/``.yarnrc.yml`` (every yarn command runs ``yarnPath``), a ``HEAD`` file (it makes
  a folder a git repository), Python's ``sitecustomize.py``/``usercustomize.py`` and any ``*.pth`` file,
  and shell and git start-up files (``.bashrc``, ``.profile``, ``.zshrc``, ``.gitconfig``, ...) for a
  workspace that holds a home folder.

Names are compared case-insensitively (``.GIT`` is ``.git`` on case-insensitive file systems).
Not covered: hard links (a link to ``.git/config`` elsewhere is that file), and files whose effect
depends on a program the user runs by hand later (``package.json`` scripts, ``conftest.py``, ``setup.py``):
those run only through an ``exec`` call or outside nami.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath

_GIT_DIR = ("git takes a folder holding HEAD, objects/ and refs/ for a repository and runs what its config "
            "says (core.fsmonitor)")
_TERRAFORM = "terraform plan runs the programs of its data \"external\" sources"
FOLDER_NAMES: Mapping[str, str] = {
    ".git": "git runs its hooks and configuration (core.fsmonitor, core.hooksPath) from .git/",
    ".hg": "Mercurial runs hooks from .hg/hgrc",
    ".vscode": "an editor runs the tasks and settings in .vscode/",
    ".idea": "an IDE runs the run configurations in .idea/",
    ".devcontainer": "a dev container runs the commands in .devcontainer/",
    ".husky": "git hooks installed by husky run from .husky/",
    ".venv": "programs of the virtual environment in .venv/ run when a tool uses it",
    "site-packages": "Python imports what is in site-packages/ (a tool running Python would run it)",
    "dist-packages": "Python imports what is in dist-packages/ (a tool running Python would run it)",
    "node_modules": "node runs the packages in node_modules/ (a tool running node would run it)",
    ".terraform": "terraform plan runs the provider binaries and modules in .terraform/",
    ".cargo": "cargo runs the programs .cargo/config.toml names (rustc-wrapper, even for cargo metadata)",
    ".mise": "mise runs its hooks and tasks when you enter the folder",
}
FILE_NAMES: Mapping[str, str] = {
    ".envrc": "direnv runs .envrc when you enter the folder",
    "makefile": "make runs the Makefile (even make -n runs its $(shell ...))",
    "gnumakefile": "make runs the Makefile (even make -n runs its $(shell ...))",
    ".pre-commit-config.yaml": "pre-commit runs the hooks it lists on every commit",
    "mise.toml": "mise runs its hooks and tasks when you enter the folder",
    ".mise.toml": "mise runs its hooks and tasks when you enter the folder",
    "mise.local.toml": "mise runs its hooks and tasks when you enter the folder",
    ".mise.local.toml": "mise runs its hooks and tasks when you enter the folder",
    "head": _GIT_DIR,
    "commondir": _GIT_DIR,
    ".yarnrc": "every yarn command runs the program its yarn-path names",
    ".yarnrc.yml": "every yarn command runs the program its yarnPath names, and its plugins",
    "sitecustomize.py": "Python runs sitecustomize.py at start-up",
    "usercustomize.py": "Python runs usercustomize.py at start-up",
    ".gitconfig": "git reads its configuration (core.fsmonitor, aliases) from .gitconfig",
    ".bashrc": "shells run their start-up files", ".bash_profile": "shells run their start-up files",
    ".bash_login": "shells run their start-up files", ".bash_logout": "shells run their start-up files",
    ".profile": "shells run their start-up files", ".zshrc": "shells run their start-up files",
    ".zshenv": "shells run their start-up files", ".zprofile": "shells run their start-up files",
    ".zlogin": "shells run their start-up files",
}
SUFFIXES: Mapping[str, str] = {
    ".pth": "Python runs the import lines of .pth files at start-up",
    ".mk": "make runs the $(shell ...) of the makefiles a Makefile includes, even make -n",
    ".tf": _TERRAFORM, ".tf.json": _TERRAFORM, ".tofu": _TERRAFORM, ".tofu.json": _TERRAFORM,
}


def _key(path: PurePath | str) -> str:
    return os.path.normpath(os.fspath(path)).casefold()


@dataclass(frozen=True)
class ProtectedPaths:
    """Files and folders (absolute) where a write needs exec approval, each with the reason; the name
    rules above always apply on top."""

    files: Mapping[str, str] = field(default_factory=dict)
    folders: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, files: Iterable[tuple[PurePath | str, str]] = (),
              folders: Iterable[tuple[PurePath | str, str]] = ()) -> ProtectedPaths:
        return cls({_key(p): why for p, why in files}, {_key(p): why for p, why in folders})


def sensitive_reason(path: PurePath | str, protected: ProtectedPaths) -> str | None:
    """Why writing the absolute ``path`` can run code (so it needs exec approval), or None."""
    key = _key(path)
    if key in protected.files:
        return protected.files[key]
    for folder, why in protected.folders.items():
        if key == folder or key.startswith(folder.rstrip(os.sep) + os.sep):
            return why
    parts = PurePath(key).parts
    for part in parts[:-1]:
        if part in FOLDER_NAMES:
            return FOLDER_NAMES[part]
    name = parts[-1] if parts else ""
    if name in FOLDER_NAMES:  # the folder itself (a file put in its place)
        return FOLDER_NAMES[name]
    if name in FILE_NAMES:
        return FILE_NAMES[name]
    return next((why for suffix, why in SUFFIXES.items() if name.endswith(suffix)), None)


def write_targets(workspace: Path, value: str) -> list[Path]:
    """The paths a write of ``value`` (relative to ``workspace``, or absolute) may reach: as written
    (normalized), and with every existing link followed. Both are judged: a link into .git counts, and so
    does a path through a .git that is itself a link."""
    written = Path(value) if os.path.isabs(value) else workspace / value
    return [Path(os.path.normpath(written)), Path(os.path.realpath(written))]


def write_reason(workspace: Path, value: str, protected: ProtectedPaths) -> str | None:
    for target in write_targets(workspace, value):
        reason = sensitive_reason(target, protected) or _inside_git_directory(target)
        if reason:
            return f"{value!r}: {reason}"
    return None


def _inside_git_directory(target: Path) -> str | None:
    """A git directory by another name: a bare repository, or a folder made into one (``HEAD``,
    ``objects/``, ``refs/``), where git reads config and hooks as it does in .git."""
    for folder in target.parents:
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
            return f"{_GIT_DIR}; {folder} is one"
    return None
