"""Finding and reading agent.yaml (and the user config, which has the same schema)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nami_yaml.config.effective import ConfigFile
from nami_yaml.config.hooks import hook_problems
from nami_yaml.config.loaded import SKILL_FILE, skill_files
from nami_yaml.config.mcp_servers import entry_problems as mcp_entry_problems
from nami_yaml.config.sandbox import absolute_paths as sandbox_absolute_paths
from nami_yaml.config.targets import prepare_targets
from nami_yaml.errors import ConfigError, Problem, SpecError
from nami_yaml.paths import expand_tool_paths, path_for_messages
from nami_yaml.spec.json_schemas import positioned_problems, read_schema_file
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import Document, JsonPath, format_path, parse_yaml, read_source
from nami_yaml.xdg import xdg_folder

CONFIG_NAME = "agent.yaml"
PATH_KEYS = (("system_file",), ("workspace",))


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    return xdg_folder("XDG_CONFIG_HOME", ".config", env) / "nami" / "config.yaml"


def find_config(explicit: str | None, env: Mapping[str, str], cwd: Path) -> tuple[Path | None, str]:
    """``--config``, then ``NAMI_CONFIG``, then agent.yaml in the current folder or any parent."""
    if explicit:
        return _must_exist(Path(explicit), "--config"), "--config"
    if env.get("NAMI_CONFIG"):
        return _must_exist(Path(env["NAMI_CONFIG"]), "NAMI_CONFIG"), "NAMI_CONFIG"
    for folder in (cwd, *cwd.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate, "found from the current folder"
    return None, "none found"


def _must_exist(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"{origin} names {path}, which is not a file")
    return path.resolve()


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand_path(spec: str, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """``~`` and ``$VARS`` / ``${VARS}`` expanded; also the names of unset variables (left as written)."""
    unset: list[str] = []

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in env:
            return env[name]
        unset.append(name)
        return match.group(0)

    expanded = _VARIABLE.sub(value, spec)
    if expanded == "~" or expanded.startswith("~/"):
        home = env.get("HOME") or os.path.expanduser("~")
        expanded = home + expanded[1:]
    return os.path.expanduser(expanded), unset


def _answer_schema(doc: Document, value: Any, base: Path, expanded: Callable[[JsonPath, str], str],
                   problems: list[Problem]) -> Any:
    """``answer_schema:`` as a schema: written here (its problems positioned here), or read from a file
    relative to this one (its problems positioned in that file)."""
    if isinstance(value, dict):
        problems.extend(positioned_problems(doc, ("answer_schema",), value))
        return value
    try:
        return read_schema_file(base / expanded(("answer_schema",), value), what="answer_schema")
    except SpecError as exc:
        problems.extend(exc.problems)
    except ConfigError as exc:
        problems.append(doc.problem(("answer_schema",), str(exc).removeprefix("answer_schema: ")))
    return value


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # too long a name, say: not a folder nami can use
        return False


def read_config(path: Path, env: Mapping[str, str] | None = None) -> ConfigFile:
    """Parse and validate one config file; raise SpecError with every problem found. Paths in it are
    made absolute (relative to the file) after ``~`` and ``$VARS`` from ``env`` are expanded."""
    config, problems = check_config(path, env)
    if problems or config is None:
        raise SpecError(problems)
    return config


def check_config(path: Path, env: Mapping[str, str] | None = None) -> tuple[ConfigFile | None, list[Problem]]:
    """Every problem of one config file, in one pass, and what of it can still be used: the file without
    the settings that have a problem (None when it does not parse, or is not a mapping). ``nami check``
    goes on with the rest, so the tools are checked even while a setting is wrong."""
    env = os.environ if env is None else env
    name = path_for_messages(path)
    try:
        text = read_source(path)
    except (OSError, ValueError) as exc:
        return None, [Problem(name, 1, 1, "$", f"cannot read config: {exc}")]
    doc, problems = parse_yaml(text, name)
    if doc is None:
        return None, problems
    data = doc.value if doc.value is not None else {}
    if not isinstance(data, dict):
        return None, [*problems, doc.problem((), f"agent.yaml must be a mapping, found {type(data).__name__}")]
    problems.extend(problems_for(doc, data, (), validator("agent")))
    if "system" in data and "system_file" in data:
        problems.append(doc.problem(("system_file",), "give either system or system_file, not both", key=True))
    problems.extend(hook_problems(doc, data))  # (before entries with problems are dropped: it explains some)
    _drop_where(data, problems)
    problems.extend(mcp_entry_problems(doc, data))
    problems.extend(prepare_targets(doc, data, env))
    _drop_where(data, problems)
    data.pop("$schema", None)  # for editors only: not a setting
    base = path.resolve().parent
    sandbox_absolute_paths(data, base)

    def expanded(where: tuple[str | int, ...], spec: str) -> str:
        result, unset = expand_path(spec, env)
        problems.extend(doc.problem(where, f"${variable} is not set (in {spec!r})") for variable in unset)
        return result

    for key_path in PATH_KEYS:
        if key_path[0] in data:
            data[key_path[0]] = str((base / expanded(key_path, data[key_path[0]])).resolve())
    for section in ("audit", "approvals"):
        if isinstance(data.get(section), dict) and "path" in data[section]:
            # Not resolved: the log may not exist yet, and a symlinked shared folder should stay as named.
            data[section]["path"] = os.path.normpath(base / expanded((section, "path"), data[section]["path"]))
    said = {problem.path for problem in problems}
    for key_path in PATH_KEYS:  # a path with an unset variable is left out, not read as well
        if format_path(key_path) in said:
            data.pop(key_path[0], None)
    if "system_file" in data:
        # Read now, so a missing or undecodable prompt is a config error that `nami check` reports.
        try:
            data["system"] = read_source(Path(data["system_file"]))
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            problems.append(doc.problem(("system_file",), f"cannot read {data['system_file']}: {reason}"))
            del data["system_file"]
    read: list[Path] = []
    if "answer_schema" in data:
        if isinstance(data["answer_schema"], str):  # sent to the model: trust covers it (config/loaded.py)
            read.append((base / expand_path(data["answer_schema"], env)[0]).resolve())
        data["answer_schema"] = _answer_schema(doc, data["answer_schema"], base, expanded, problems)
    if "workspace" in data and not _is_folder(Path(data["workspace"])):
        problems.append(doc.problem(("workspace",), f"workspace {data['workspace']} is not a folder"))
        del data["workspace"]
    tools = data.get("tools") or {}
    resolved = []
    for index, written in enumerate(tools.get("files", [])):
        spec = expanded(("tools", "files", index), written)
        if not expand_tool_paths(spec, base):
            shown = repr(written) if spec == written else f"{written!r} ({spec})"
            problems.append(doc.problem(("tools", "files", index), f"{shown} matches no tool file (relative to {base})"))
            continue  # the other entries are still loaded (and checked)
        resolved.append(spec if os.path.isabs(spec) else str(base / spec))
    if "files" in tools:
        tools["files"] = resolved
    skills = []
    for index, spec in enumerate(data.get("skills", [])):
        folder = str((base / os.path.expanduser(spec)).resolve())
        if not skill_files(folder):
            problems.append(doc.problem(("skills", index), f"{spec!r} holds no {SKILL_FILE}, nor do its "
                                                           f"sub-folders (relative to {base})"))
            continue
        skills.append(folder)
    if "skills" in data:
        data["skills"] = skills
    if isinstance(data.get("policy_tests"), str):
        data["policy_tests"] = str(base / expanded(("policy_tests",), data["policy_tests"]))
    return ConfigFile(path=path.resolve(), data=data, doc=doc, read=tuple(read)), problems


_STEP = re.compile(r"""\.([A-Za-z_]\w*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]""")


def _steps(path: str, most: int) -> list[str | int] | None:
    """The first ``most`` steps of a problem's ``$.a.b[0]`` path (None: one that does not read back)."""
    steps: list[str | int] = []
    at = 1
    while at < len(path) and len(steps) < most:
        match = _STEP.match(path, at)
        if match is None:
            return None
        name, index, quoted = match.groups()
        steps.append(name if name is not None else int(index) if index is not None else ast.literal_eval(quoted))
        at = match.end()
    return steps


def _drop_where(data: dict[str, Any], problems: list[Problem]) -> None:
    """Leave out the settings that have an error (a top-level key, or one key below it: ``model.temprature``
    goes, the rest of ``model`` stays), so what is left is valid and can still be used and checked."""
    for problem in problems:
        steps = _steps(problem.path, 2) if problem.is_error else None
        if not steps or steps[0] not in data:
            continue
        inner = data[steps[0]]
        if len(steps) == 2 and isinstance(inner, dict) and isinstance(steps[1], str):
            inner.pop(steps[1], None)
        elif len(steps) == 2 and steps[0] == "rules" and isinstance(inner, list) and isinstance(steps[1], int):
            inner[steps[1]] = None  # one rule left out; the others keep their index (their position)
        else:  # the key itself, or an item of another list: the whole setting
            del data[steps[0]]
