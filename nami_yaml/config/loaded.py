"""What a project loads: its agent.yaml, prompt file, answer schema file, tool files (and their docs), skills,
and the code of the MCP servers it starts, with the folders all of these live in.

One listing, read by the trust fingerprint (config/trust.py) and by the loaders (the skills here, the tool
files of app/toolset.py, the docs check of the tool loader through ``paths.walked``), so what is loaded is
what trust saw: a file in a folder the walk skips (``node_modules``) or behind a folder link is neither
fingerprinted nor loaded.

A server's code is what its command line names inside the project: the folder tree of each file it names
(``python3 server.py`` imports ``helper.py`` beside it), the package of ``python -m pkg``, a local folder
given as its first argument (``npx ./srv``, ``node ./srv``), its working folder when it is given code inline
(``python3 -c``, ``node -e``, ``bash -c``), and the folders of its ``PYTHONPATH`` and ``NODE_PATH``. Folders it is only given to work on (``./data``, after the package) are not its code.

A tool's code outside its folder is read the same way from its ``command:``, ``docs:`` and ``script:``
(``tool_code``): the files of the project it runs, not those it works on (``jq . data/config.json``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nami_yaml.config.hooks import HookSpec, hook_words
from nami_yaml.config.instructions import project_instruction_files
from nami_yaml.paths import Resolver, expand_tool_paths, walk
from nami_yaml.shell.command_risks import PYTHON
from nami_yaml.spec import validated_cache
from nami_yaml.spec.yamlpos import read_file

if TYPE_CHECKING:  # config.effective reads nothing of this module; only the type is needed
    from nami_yaml.config.effective import Effective

SKILL_FILE = "SKILL.md"
AGENTS_SKILLS = Path(".agents") / "skills"  # the Agent Skills folder other agents read, in a project and in ~
_PYTHON_VALUE_OPTIONS = frozenset({"-X", "-W", "--check-hash-based-pycs"})
CODE_PATH_VARIABLES = ("PYTHONPATH", "NODE_PATH")  # folders an interpreter imports from
NODE = re.compile(r"^(node|nodejs|npx|npm|pnpm|pnpx|yarn|bun|bunx|deno|tsx|ts-node)$")  # they require node_modules
PACKAGE_SKIPPED = frozenset({".git", ".cache"})  # inside node_modules, only these are not node's code
# Options that give an interpreter its code inline: it then imports (requires, runs) from its working folder.
INLINE_CODE = {"python": ("-c",), "pypy": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "bun": ("-e", "--eval"),
               "sh": ("-c",), "bash": ("-c",), "dash": ("-c",), "zsh": ("-c",), "ksh": ("-c",)}


def skill_files(spec: str | Path) -> list[Path]:
    """A folder with a SKILL.md is one skill; otherwise each of its sub-folders with one is (as the walk
    reaches them: not in node_modules, not behind a folder link)."""
    folder = Path(spec)
    try:
        if (folder / SKILL_FILE).is_file():
            return [folder / SKILL_FILE]
        if not folder.is_dir():
            return []
    except (OSError, ValueError):  # a path the system cannot look at (too long): no skills there
        return []
    return [file for file in walk(folder) if file.name == SKILL_FILE and file.parent.parent == folder]


@dataclass(frozen=True)
class ServerCode:
    """The project's code one MCP server (or one tool, from outside its folder) runs."""

    name: str
    files: tuple[Path, ...] = ()  # files of the project its command line names (resolved)
    folders: tuple[Path, ...] = ()  # folders its code comes from: walked, like tool folders
    packages: tuple[Path, ...] = ()  # node_modules, virtual environments it loads from: walked whole

    def covered(self) -> list[Path]:
        return sorted({*self.files, *(file for folder in self.folders for file in walk(folder)),
                       *(file for folder in self.packages for file in walk(folder, PACKAGE_SKIPPED))})


@dataclass(frozen=True)
class LoadedFiles:
    config: Path | None
    prompt: Path | None = None
    read: tuple[Path, ...] = ()  # files agent.yaml's settings were read from (answer_schema), sent to the model
    tools: tuple[Path, ...] = ()  # tool files, as named (a glob or folder expanded)
    skills: tuple[Path, ...] = ()  # SKILL.md files
    tool_folders: tuple[Path, ...] = ()  # resolved; entry points import from them, docs files live there
    skill_folders: tuple[Path, ...] = ()
    servers: tuple[ServerCode, ...] = ()
    tool_code: tuple[ServerCode, ...] = ()  # project files tools' command lines run, outside the tool folders
    # Every AGENTS.md of the project, listed for trust alone (project_only): the prompt reads those from the
    # root down to the current folder (config/instructions.py), so one trust covers every folder.
    instructions: tuple[Path, ...] = ()

    def folders(self) -> list[Path]:
        return sorted({*self.tool_folders, *self.skill_folders,
                       *(f for s in (*self.servers, *self.tool_code) for f in s.folders)})

    def server_files(self) -> list[Path]:
        return sorted({file for server in (*self.servers, *self.tool_code) for file in server.files})

    def covered(self) -> list[Path]:
        """Every file of the listing: those named, and every file the walk of its folders reaches."""
        resolve = Resolver()
        files: set[Path] = {*self.tools, *map(resolve, self.tools), *self.skills, *self.server_files(),
                            *self.instructions}
        files.update(p for p in (self.config, self.prompt, *self.read) if p is not None)
        for folder in self.folders():
            files.update(walk(folder))
        for server in self.servers:
            files.update(file for folder in server.packages for file in walk(folder, PACKAGE_SKIPPED))
        return sorted(files)


def loaded_files(effective: Effective, *, project_only: bool = False) -> LoadedFiles:
    """What the settings load: of every file layered (the loaders), or of the project's agent.yaml alone
    (``project_only``: what trust covers; the user's own files need no trust). Listed once per settings
    value (the folders' files are walked again by ``LoadedFiles.covered()``, which trust's checks call)."""
    key = "loaded_files:project" if project_only else "loaded_files"
    if key not in effective.memo:
        effective.memo[key] = _list_loaded(effective, project_only)
    return effective.memo[key]


def _list_loaded(effective: Effective, project_only: bool) -> LoadedFiles:
    read: tuple[Path, ...] = ()
    if project_only:
        project_file = effective.config_file(effective.config_path)
        data: Mapping[str, Any] = project_file.data if project_file is not None else {}
        read = project_file.read if project_file is not None else ()
    else:
        data = effective.values
    tools = [file for spec in (data.get("tools") or {}).get("files", []) or []
             for file in expand_tool_paths(spec, Path("/"))]
    skill_folders = [Path(spec) for spec in data.get("skills") or []]
    servers: list[ServerCode] = []
    code: list[ServerCode] = []
    instructions: list[Path] = []
    # Skills other agents read: the project's .agents/skills (covered by trust), the user's ~/.agents/skills
    # (their own: loaded, never listed for trust).
    conventions = effective.instructions
    found_skills: list[Path] = []
    if effective.config_path is not None:
        project = effective.config_path.parent.resolve()
        found_skills.append(project / AGENTS_SKILLS)
        if project_only and conventions.agents_md:
            instructions = project_instruction_files(project, effective.cwd)
        workspace = Path(effective.get("workspace") or project).resolve()
        servers = [server_code(name, entry, workspace, project)
                   for name, entry in (data.get("mcp_servers") or {}).items() if isinstance(entry, Mapping)]
        # The two listings (all files, the project's alone) mostly name the same tool files: read once.
        key = ("tool_code", tuple(tools), workspace, project)
        if key not in effective.memo:
            effective.memo[key] = tool_code(tools, workspace, project)
        code = list(effective.memo[key])
        # Hooks are project code too: the files their command lines run (as they run: from the project's
        # folder, with $CLAUDE_PROJECT_DIR the workspace).
        hooks = code_of("hooks", ([HookSpec("", tuple(words), base=project).argv(workspace)[0], *words[1:]]
                                  for words in hook_words(data)), project, project)
        if hooks is not None:
            code.append(hooks)
    if not project_only:
        found_skills.append(Path.home() / AGENTS_SKILLS)
    resolve = Resolver()
    if conventions.agents_skills:
        for folder in dict.fromkeys(folder.resolve() for folder in found_skills):
            if folder not in skill_folders and folder.is_dir() and skill_files(folder):
                skill_folders.append(folder)
    return LoadedFiles(
        config=effective.config_path, prompt=Path(data["system_file"]) if data.get("system_file") else None, read=read,
        tools=tuple(tools), skills=tuple(file for folder in skill_folders for file in skill_files(folder)),
        tool_folders=tuple(sorted(map(Path, {os.path.dirname(resolve.text(os.fspath(file))) for file in tools}))),
        skill_folders=tuple(skill_folders),
        servers=tuple(server for server in servers if server.files or server.folders), tool_code=tuple(code),
        instructions=tuple(instructions))


def server_code(name: str, entry: Mapping[str, Any], workspace: Path, project: Path) -> ServerCode:
    """The files and folders of ``project`` one ``mcp_servers:`` entry runs (see the module's docstring)."""
    base = (workspace / os.path.expanduser(entry["cwd"])).resolve() if entry.get("cwd") else workspace
    command = str(entry.get("command") or "")
    args = [str(arg) for arg in entry.get("args") or ()]
    files: list[Path] = []
    folders: list[Path] = []

    def named(word: str) -> Path | None:
        return project_path(word, base, project)

    for word in [command, *args]:
        path = named(word)
        if path is not None and path.is_file():
            files.append(path)
            folders.append(path.parent)  # a script imports (requires, sources) what is beside it
    first = next((arg for arg in args if not arg.startswith("-")), None)
    if first is not None and (path := named(first)) is not None and path.is_dir():
        folders.append(path)  # npx ./srv, node ./srv: a local package
    for module in modules([command, *args]):
        top = module.split(".")[0]
        for candidate in (base / top, base / f"{top}.py"):
            if (path := named(str(candidate))) is not None:
                if path.is_file():
                    files.append(path)
                folders.append(path if path.is_dir() else path.parent)
    family = re.sub(r"[0-9.]+$", "", os.path.basename(command))
    if any(arg in INLINE_CODE.get(family, ()) for arg in args):
        folders.append(base)  # `python3 -c "import helper"` imports helper.py from there
    folders += code_path_folders(entry.get("env"), base, project)
    packages = node_packages(folders, project) if NODE.match(family) else []
    packages += virtual_environments([command, *args], base, project)
    return ServerCode(name, tuple(dict.fromkeys(files)), tuple(_outermost(folders)), tuple(packages))


def virtual_environments(words: Iterable[str], base: Path, project: Path) -> list[Path]:
    """The project's virtual environments a command line runs a program of (``.venv/bin/python``): their
    interpreter is a link out of the project and the walk skips them, but what it imports is there."""
    found: set[Path] = set()
    for word in words:
        if "/" not in word or word.startswith("-") or "${" in word:
            continue
        try:
            path = Path(os.path.normpath(base / os.path.expanduser(word)))  # the link itself, not where it leads
            for above in path.parents:
                if above != project and project not in above.parents:
                    break
                if (above / "pyvenv.cfg").is_file():
                    found.add(above)
        except (OSError, ValueError):
            continue
    return sorted(found)


def node_packages(folders: Iterable[Path], project: Path) -> list[Path]:
    """The ``node_modules`` folders node requires from for code in ``folders``: beside each and in every
    folder above it, up to the project's root. The walk skips them (they are large, and nami loads nothing
    from them), but node runs their code."""
    found: set[Path] = set()
    for folder in folders:
        for above in (folder, *folder.parents):
            if above != project and project not in above.parents:
                break
            if (above / "node_modules").is_dir() and not (above / "node_modules").is_symlink():
                found.add(above / "node_modules")
    return sorted(found)


def project_path(word: str, base: Path, project: Path) -> Path | None:
    """The existing file or folder of ``project`` a word of a command line names (from ``base``), or None."""
    if not word or word.startswith("-") or "${" in word:
        return None
    try:  # any word of the file's: too long for a path, a NUL in it…
        candidate = (base / os.path.expanduser(word)).resolve()
        inside = candidate == project or project in candidate.parents
        return candidate if inside and candidate.exists() else None
    except (OSError, ValueError):
        return None


def code_path_folders(env: object, base: Path, project: Path) -> list[Path]:
    """The project's folders a ``PYTHONPATH`` or ``NODE_PATH`` of ``env`` names: an interpreter imports from them."""
    if not isinstance(env, Mapping):
        return []
    parts = [part for variable in CODE_PATH_VARIABLES for part in str(env.get(variable, "")).split(os.pathsep)]
    return [path for part in parts if (path := project_path(part, base, project)) is not None and path.is_dir()]


# Programs that run the file they are given as code, importing (requiring, sourcing) from beside it. The
# files other programs are given are what they work on (`jq . data/config.json`), not code.
RUNS_FILES = re.compile(r"^(python|pypy|node|nodejs|deno|bun|tsx|ts-node|ruby|perl|php|lua|Rscript|bash|sh|dash|"
                        r"zsh|ksh)[0-9.]*$")
_SHELL_OPERATORS = frozenset(";&|()<>")


def tool_code(files: Iterable[Path], workspace: Path, project: Path) -> list[ServerCode]:
    """The project's code the tools of ``files`` run from outside their own folders: a program given by
    its path (``./scripts/x``), a file an interpreter runs (``python3 scripts/report.py``) and the folder
    it imports from, a ``-m`` module, a ``PYTHONPATH``; in ``command:``, ``docs:`` and the command lines
    of a ``script:`` (read best effort: more than runs is only fingerprinted, never run)."""
    found: list[ServerCode] = []
    bases: dict[str, Path] = {}
    for file in files:
        for entry in _tool_entries(file):
            cwd = str(entry.get("cwd") or ".")
            if cwd not in bases:
                bases[cwd] = (workspace / cwd).resolve()
            code = code_of(str(entry.get("name") or file.name), _command_lines(entry), bases[cwd], project,
                           entry.get("env"))
            if code is not None:
                found.append(code)
    return found


def code_of(name: str, lines: Iterable[list[str]], base: Path, project: Path, env: Any = None) -> ServerCode | None:
    """The project's code that command ``lines`` run from ``base``: a program given by its path, a file an
    interpreter runs and the folder it imports from, a ``-m`` module, a ``PYTHONPATH`` of ``env``."""
    files_run: list[Path] = []
    for words in lines:
        runner = words[:1] in (["source"], ["."]) or any(RUNS_FILES.match(os.path.basename(word)) for word in words)
        for index, word in enumerate(words):
            # Only a runner's words, or a first word with a slash, can name code: the others are not looked
            # up (a thousand tool files' command lines are some ten thousand paths to resolve).
            if not (runner or (index == 0 and "/" in word)):
                continue
            path = project_path(word, base, project)
            if path is not None and path.is_file():
                files_run.append(path)
        for module in modules(words):
            top = module.split(".")[0]
            files_run += [path for candidate in (top, f"{top}.py")
                          if (path := project_path(candidate, base, project)) is not None]
    folders = [path if path.is_dir() else path.parent for path in files_run]
    folders += code_path_folders(env, base, project)
    if not (files_run or folders):
        return None
    return ServerCode(name, tuple(dict.fromkeys(p for p in files_run if p.is_file())), tuple(_outermost(folders)))


def _tool_entries(file: Path) -> list[Mapping[str, Any]]:
    """The tool entries of a tool file, read as the loader reads it and kept for it (``read_file``): what
    trust lists must be read as what runs, and each file is read and parsed once per command (not at all when
    the cache of valid tool files knows its bytes)."""
    try:
        source = read_file(file)
    except (OSError, ValueError):
        return []
    known = validated_cache.lookup(file, source.digest)
    if known is not None:
        return _entries_of(known.value)
    doc, _ = source.parsed()
    return _entries_of(doc.value if doc is not None else None)


def _entries_of(value: Any) -> list[Mapping[str, Any]]:
    entries = value.get("tools") if isinstance(value, Mapping) and isinstance(value.get("tools"), list) else [value]
    return [entry for entry in entries if isinstance(entry, Mapping)]


def _command_lines(entry: Mapping[str, Any]) -> list[list[str]]:
    """The command lines of a tool, as words: its argv ``command:`` and ``docs:`` (without the placeholders
    the model fills in) and each simple command of its ``script:``."""
    lines: list[list[str]] = []
    for key in ("command", "docs"):
        value = entry.get(key)
        if isinstance(value, list):
            lines.append([word for word in _strings(value) if "{" not in word])
    script = entry.get("script")
    if isinstance(script, str):
        lines += _script_commands(script)
    return lines


def _strings(value: list[Any]) -> list[str]:
    """The words of an argv template, its optional groups (nested lists) included."""
    return [word for item in value for word in (_strings(item) if isinstance(item, list) else [str(item)])]


def _script_commands(script: str) -> list[list[str]]:
    commands: list[list[str]] = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote on this line (a multi-line string): its words as they are
            tokens = line.split()
        for token in [*tokens, ";"]:
            if token and set(token) <= _SHELL_OPERATORS:
                if words:
                    commands.append(words)
                words = []
            else:
                words.append(token)
    return commands


def modules(words: list[str]) -> list[str]:
    """The modules a command line may run with ``-m``: after each python in it (``env python3 -m x``, ``uv run
    python -m x``), and after any ``-m``/``--module`` word at all (``uv run -m x``). More than python would
    run is harmless here: it is only fingerprinted."""
    found = [module for index, word in enumerate(words) if PYTHON.fullmatch(os.path.basename(word))
             and (module := python_module(words[index + 1:])) is not None]
    found += [words[index + 1] for index, word in enumerate(words[:-1]) if word in ("-m", "--module")]
    return list(dict.fromkeys(module for module in found if module and not module.startswith("-")))


def python_module(args: Iterable[str]) -> str | None:
    """The module of ``python [options] -m MODULE``, or None (a script, ``-c`` code, or no argument). Short
    options cluster as python reads them: ``-Bm mod``, ``-um mod``, ``-Wignore``."""
    words = iter(args)
    for word in words:
        if word in _PYTHON_VALUE_OPTIONS:
            next(words, None)
            continue
        if word == "--" or not word.startswith("-") or word.startswith("--"):
            if word.startswith("--") and word != "--":
                continue  # --version, --help…: no module, but nothing to skip
            return None
        for position, letter in enumerate(word[1:], 1):
            if letter == "c":
                return None
            if letter == "m":
                return word[position + 1:] or next(words, None)
            if f"-{letter}" in _PYTHON_VALUE_OPTIONS:
                if position == len(word) - 1:
                    next(words, None)  # -X dev, -W ignore: the value is the next word
                break  # -Xdev, -Wignore: the value is the rest of the word
    return None


def _outermost(folders: Iterable[Path]) -> list[Path]:
    """The folders without those inside another of them (walking both would list files twice)."""
    unique = sorted(set(folders))
    return [f for f in unique if not any(other != f and other in f.parents for other in unique)]
