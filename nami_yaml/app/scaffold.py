"""`nami init`: the files of a new project (agent.yaml, an example tool, the schemas editors read), and
writing them so that nothing is overwritten and no file is ever half-written.

Editors find a file's schema through the modeline ``# yaml-language-server: $schema=PATH``. The path is to
a copy of nami's schema in the project (``.nami/schemas/``), relative to the file: it works offline, in a
checkout on any machine, and needs no web address (nami's schemas are not hosted anywhere).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nami_yaml.config.files import CONFIG_NAME
from nami_yaml.spec.validate import SCHEMA_NAMES, schema_text

SCHEMA_FOLDER = Path(".nami") / "schemas"
TOOL_FOLDER = "tools"
EXAMPLE_TOOL = "count_lines"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class NewFile:
    path: Path  # absolute
    text: str


class ScaffoldError(Exception):
    """Nothing was written: a file exists already, a name is not valid, or the disk said no."""


def schema_path(root: Path, name: str) -> Path:
    return root / SCHEMA_FOLDER / f"{name}.schema.json"


def modeline(file: Path, root: Path, schema: str) -> str:
    relative = Path(os.path.relpath(schema_path(root, schema), file.parent)).as_posix()
    return f"# yaml-language-server: $schema={relative}\n"


# The schemas of the files people write, for their editors (the hooks' input and output are not written).
EDITOR_SCHEMAS = tuple(name for name in SCHEMA_NAMES if not name.startswith("hook-"))


def schema_files(root: Path) -> list[NewFile]:
    return [NewFile(schema_path(root, name), schema_text(name)) for name in EDITOR_SCHEMAS]


AGENT_TEMPLATE = """\
# nami's agent for this project. Reference: docs/config.md of nami. `nami check` validates this file and
# every tool it loads; `nami doctor` checks the whole setup (key, endpoint, programs on PATH).

model:
  provider: deepseek            # https://api.deepseek.com; the key comes from $DEEPSEEK_API_KEY
  name: deepseek-chat           # or deepseek-reasoner
  temperature: 0.2
# A local model with Ollama instead (`ollama pull qwen2.5-coder:7b`; no key needed): replace the model
# section above with this one.
# model:
#   provider: ollama            # http://localhost:11434/v1
#   name: qwen2.5-coder:7b
#   context_window: 32768

system: |
  You are the assistant of this project. Read before you change anything, prefer read-only tools,
  and say what you did and what you found.

tools:
  builtin: default              # read_file, write_file, edit_file, list_dir, grep, glob, bash, fetch_url
  # nami's tested tools for CLIs such as git or kubectl (`nami tools library` lists them):
  library: {library}
  files: [tools/]               # your own tools, one YAML file each (`nami init --tool NAME` adds one)

limits:
  max_steps: 40                 # model requests in one run

permissions:                    # before a write or exec tool runs: allow | ask | deny (read tools just run)
  write: ask
  exec: ask
"""

EXAMPLE_TEMPLATE = """\
# An example tool: the model sees its name, description and parameters, and nami runs the command.
# Reference: docs/tools.md of nami. Try it: `nami tools call {name} paths='["agent.yaml"]' --dry-run`.
name: {name}
description: Count the lines (and optionally the words) of files in the workspace, one line per file and a total.
risk: read                      # read | write | exec: write and exec tools ask before they run
parameters:
  type: object
  properties:
    paths: {{type: array, items: {{type: string}}, minItems: 1, description: "Files, relative to the workspace."}}
    words: {{type: boolean, default: false, description: Count words too.}}
  required: [paths]
# An argv template, never a shell: "{{paths}}" gives one argument per path, after "--" (so a path starting
# with "-" is a file, hence allow_dash); [-w, "{{words}}"] appears only when words is true.
allow_dash: [paths]
command: [wc, -l, [-w, "{{words}}"], --, "{{paths}}"]
timeout: 30
"""

TOOL_TEMPLATE = """\
# A tool for the model. Reference: docs/tools.md of nami. Check it with `nami check`; see what a call
# would run with `nami tools call {name} target=example --dry-run`.
name: {name}
description: Say what {name} does, what it returns and its limits; the model reads this to decide when to call it.
risk: read                      # read | write | exec: write and exec tools ask before they run
parameters:
  type: object
  properties:
    target: {{type: string, description: What to work on.}}
    verbose: {{type: boolean, default: false, description: Say more.}}
  required: [target]
# An argv template, never a shell: "{{target}}" fills one argument (a value starting with "-" is refused);
# [--verbose, "{{verbose}}"] appears only when verbose is true. Replace echo with your program.
command: [echo, [--verbose, "{{verbose}}"], "{{target}}"]
"""


def agent_text(root: Path, library: Sequence[str]) -> str:
    return modeline(root / CONFIG_NAME, root, "agent") + AGENT_TEMPLATE.format(library=f"[{', '.join(library)}]")


def tool_file(root: Path, name: str, folder: str = TOOL_FOLDER, *, example: bool = False) -> NewFile:
    if not TOOL_NAME.match(name):
        raise ScaffoldError(f"{name!r} is not a tool name: 1 to 64 letters, digits, _ or -")
    path = root / folder / f"{name}.yaml"
    template = EXAMPLE_TEMPLATE if example else TOOL_TEMPLATE
    return NewFile(path, modeline(path, root, "tool") + template.format(name=name))


def project_files(root: Path, library: Sequence[str]) -> list[NewFile]:
    """agent.yaml, the example tool and the schema copies of a new project in ``root``."""
    return [NewFile(root / CONFIG_NAME, agent_text(root, library)),
            tool_file(root, EXAMPLE_TOOL, example=True), *schema_files(root)]


# What says a project plainly uses a library group's CLI: group -> (why, a test on a file's path).
_SKIPPED = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".terraform", ".tox", "vendor",
            "dist", "build", ".nami"}
_MAX_DEPTH, _MAX_FILES, _MAX_MANIFESTS = 4, 5_000, 200
_K8S = re.compile(r"^apiVersion:\s*\S+.*^kind:\s*\w+|^kind:\s*\w+.*^apiVersion:\s*\S+", re.M | re.S)


def used_groups(root: Path) -> dict[str, str]:
    """The library groups a project plainly uses, each with the file that says so (``.git`` -> git,
    ``Chart.yaml`` -> helm, ``*.tf`` -> terraform, a ``Dockerfile`` or compose file -> docker, a Kubernetes
    manifest -> kubectl, a systemd unit -> systemd). A bounded walk (depth, files), skipping dependency
    and cache folders; nothing is followed through a link."""
    found: dict[str, str] = {}
    if (root / ".git").exists():
        found["git"] = ".git"
    seen = manifests = 0
    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED and depth < _MAX_DEPTH)
        for name in sorted(files):
            seen += 1
            if seen > _MAX_FILES:
                return found
            path = Path(folder) / name
            shown = path.relative_to(root).as_posix()
            lower = name.lower()
            if lower == "chart.yaml":
                found.setdefault("helm", shown)
            elif lower.endswith(".tf"):
                found.setdefault("terraform", shown)
            elif lower.startswith("dockerfile") or lower.endswith(".dockerfile") or lower in (
                    "compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"):
                found.setdefault("docker", shown)
            elif lower.endswith((".service", ".timer", ".socket")):
                found.setdefault("systemd", shown)
            elif (lower.endswith((".yaml", ".yml")) and "kubectl" not in found and manifests < _MAX_MANIFESTS
                  and not path.is_symlink()):
                manifests += 1
                if lower in ("kustomization.yaml", "kustomization.yml") or _K8S.search(_head(path)):
                    found["kubectl"] = shown
    return found


def _head(path: Path, size: int = 4096) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(size).decode("utf-8", errors="replace")
    except OSError:
        return ""


def existing(files: Sequence[NewFile]) -> list[Path]:
    return [f.path for f in files if os.path.lexists(f.path)]


def link_problem(root: Path, files: Sequence[NewFile]) -> str | None:
    """Why writing ``files`` could land outside ``root``: a folder or file on the way that is a symbolic
    link (a repository's ``.nami`` pointing at ~/.config, say), or a path not below ``root`` at all."""
    for file in files:
        try:
            parts = file.path.relative_to(root).parts
        except ValueError:
            return f"{file.path} is not inside {root}; nothing was written"
        below = root
        for part in parts:
            below = below / part
            if below.is_symlink():
                return (f"{below} is a symbolic link (to {os.readlink(below)}): nami init writes only inside the "
                        "project, so nothing was written; remove the link, or write the files yourself")
    return None


def create_files(files: Sequence[NewFile], *, root: Path) -> list[Path]:
    """Write every file below ``root``, or none: refuse (ScaffoldError) if one exists or a folder on the way
    is a link; each appears whole or not at all."""
    problem = link_problem(root, files)
    if problem:
        raise ScaffoldError(problem)
    taken = existing(files)
    if taken:
        raise ScaffoldError(f"{', '.join(map(str, taken))} already exist{'s' if len(taken) == 1 else ''}; "
                            "nothing was written")
    written: list[Path] = []
    try:
        for file in files:
            _write(file, replace=False)
            written.append(file.path)
    except BaseException:
        for path in written:  # all or nothing
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return written


def refresh_schemas(root: Path) -> list[Path]:
    """Replace the project's schema copies with this nami's (each atomically); return those that changed.
    Nothing is written when a folder on the way, or a copy, is a link (ScaffoldError)."""
    problem = link_problem(root, schema_files(root))
    if problem:
        raise ScaffoldError(problem)
    changed = []
    for file in schema_files(root):
        try:
            if file.path.read_text(encoding="utf-8") == file.text:
                continue
        except (OSError, UnicodeDecodeError):
            pass
        _write(file, replace=True)
        changed.append(file.path)
    return changed


def _write(file: NewFile, *, replace: bool) -> None:
    """A temporary file in the same folder, synced, then linked (new) or renamed (replace) into place."""
    folder = file.path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".nami-init-{secrets.token_hex(4)}.tmp"
        with open(temporary, "x", encoding="utf-8") as handle:
            handle.write(file.text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise ScaffoldError(f"cannot write {file.path}: {exc.strerror or exc}") from None
    try:
        if replace:
            os.replace(temporary, file.path)
        else:
            _link_new(temporary, file.path)
    except FileExistsError:
        raise ScaffoldError(f"{file.path} already exists; nothing was written there") from None
    except OSError as exc:
        raise ScaffoldError(f"cannot write {file.path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def _link_new(temporary: Path, target: Path) -> None:
    """Put ``temporary`` at ``target`` only if nothing is there: a hard link fails if the name is taken.
    Where links are not supported, claim the name exclusively first, then rename over the empty claim."""
    try:
        os.link(temporary, target)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.replace(temporary, target)
