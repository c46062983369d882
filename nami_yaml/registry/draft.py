"""A tool as read from YAML, before it becomes a Tool: what every load-time check looks at.

Checks see the raw mapping (which may be wrong in any way the schema reports), so every accessor here
answers with a safe value for a malformed field instead of raising: one mistake must not hide the others.
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from nami_yaml.errors import ERROR, WARNING, Problem
from nami_yaml.registry.targets import OPTIONAL, TARGET_PARAMETER, TRUE, target_mode, target_parameter
from nami_yaml.runtime import TargetSet
from nami_yaml.sandbox_settings import SandboxSettings
from nami_yaml.spec.validate import schema
from nami_yaml.spec.yamlpos import Document, JsonPath

RUNNER_KEYS = ("command", "pipeline", "script", "entrypoint")
NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class Host:
    """The machine `nami check` runs on. Given, the loader also warns about programs missing from
    ``search_path`` (PATH) and ``cwd:`` folders missing from ``workspace``, and about programs needing what
    their sandbox does not declare (``sandbox``: the project's settings; mode off: nothing to say); plain
    loading skips that."""

    workspace: Path
    search_path: str | None
    sandbox: SandboxSettings = SandboxSettings()
    # Programs looked up on ``search_path`` so far: a thousand tools mostly run the same few.
    _found: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def which(self, program: str) -> str | None:
        """``shutil.which`` of ``program`` on ``search_path``, looked up once per program."""
        if program not in self._found:
            self._found[program] = shutil.which(program, path=self.search_path)
        return self._found[program]


@dataclass
class ToolDraft:
    doc: Document
    where: JsonPath  # the tool's own path in the file: () or ("tools", 3)
    raw: dict[str, Any]
    file: Path
    problems: list[Problem] = field(default_factory=list)
    host: Host | None = None
    targets: TargetSet = field(default_factory=TargetSet)  # the project's, for tools that run on one
    # nami's own file (a built-in): part of its code, validated against the schemas by the test suite, not at
    # every start (compiling the two schemas' fast checks costs some 75 ms of every command's start).
    of_nami: bool = False

    def error(self, sub: JsonPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem((*self.where, *sub), message, key=key, severity=ERROR))

    def warn(self, sub: JsonPath, message: str, *, key: bool = False) -> None:
        self.problems.append(self.doc.problem((*self.where, *sub), message, key=key, severity=WARNING))

    def intended_key(self, key: str) -> str | None:
        """``key`` if present, else an unknown key that is a misspelling of it (`paramters:`).

        The misspelling is reported by the schema; reading it anyway lets the checks that depend on it
        (placeholders need the parameters) report their problems in the same run.
        """
        if key in self.raw:
            return key
        known = known_tool_keys()
        for candidate in self.raw:
            if candidate not in known and difflib.get_close_matches(candidate, known, n=1, cutoff=0.6) == [key]:
                return candidate
        return None

    @cached_property
    def parameters_key(self) -> str:
        return self.intended_key("parameters") or "parameters"

    @cached_property
    def parameters(self) -> dict[str, Any]:
        value = self.raw.get(self.parameters_key, NO_PARAMETERS)
        return value if isinstance(value, dict) else NO_PARAMETERS

    @cached_property
    def target_mode(self) -> str | None:
        """``true``, ``optional`` or None: whether the tool file says the tool runs on a target."""
        return target_mode(self.raw)

    @cached_property
    def targeted(self) -> bool:
        """Whether the tool runs on a target in this project (``optional`` only where there are targets)."""
        return self.target_mode in (TRUE, OPTIONAL) and bool(self.targets)

    @cached_property
    def properties(self) -> dict[str, Any]:
        """The parameters' schemas, with the ``target`` a targeted tool gets (even when pinned: every call
        then has it), so the checks of placeholders see it as the runner will."""
        value = self.parameters.get("properties")
        own = value if isinstance(value, dict) else {}
        if self.targeted and TARGET_PARAMETER not in own:
            return {**own, TARGET_PARAMETER: target_parameter(self.targets)}
        return own

    @cached_property
    def required(self) -> set[str]:
        value = self.parameters.get("required")
        names = {name for name in value if isinstance(name, str)} if isinstance(value, list) else set()
        if self.targeted and self.targets.default is None:
            names.add(TARGET_PARAMETER)
        return names

    def schema_of(self, name: str) -> dict[str, Any]:
        value = self.properties.get(name)
        return value if isinstance(value, dict) else {}

    def parameter_path(self, name: str, *rest: str | int) -> JsonPath:
        return (self.parameters_key, "properties", name, *rest)

    @cached_property
    def runners(self) -> list[str]:
        return [key for key in RUNNER_KEYS if key in self.raw]

    @cached_property
    def runner(self) -> tuple[str, str] | None:
        """(kind, key) of the runner to check: the first runner, else a misspelt one (`comand:`)."""
        if self.runners:
            return self.runners[0], self.runners[0]
        for kind in RUNNER_KEYS:
            key = self.intended_key(kind)
            if key is not None:
                return kind, key
        return None

    @property
    def runner_kind(self) -> str | None:
        return self.runner[0] if self.runner else None

    @property
    def runner_key(self) -> str | None:
        return self.runner[1] if self.runner else None

    @property
    def argvs(self) -> list[tuple[JsonPath, list[Any]]]:
        """The argv templates of a ``command:`` (one) or a ``pipeline:`` (one per stage), each with its path
        in the tool: every check of an argv applies to each of them alike."""
        key = self.runner_key
        value = self.raw.get(key) if key else None
        if not isinstance(value, list) or key is None:
            return []
        if self.runner_kind == "command":
            return [((key,), value), *self.plan_argvs]
        if self.runner_kind == "pipeline":
            return [((key, index), stage) for index, stage in enumerate(value) if isinstance(stage, list)]
        return []

    @property
    def plan_argvs(self) -> list[tuple[JsonPath, list[Any]]]:
        """The argv templates of ``plan:`` (its command and show), checked as ``command:`` is."""
        plan = self.raw.get("plan")
        if not isinstance(plan, dict):
            return []
        return [(("plan", key), plan[key]) for key in ("command", "show") if isinstance(plan.get(key), list)]

    def text(self, key: str) -> str | None:
        value = self.raw.get(key)
        return value if isinstance(value, str) else None

    def strings(self, key: str) -> list[str]:
        value = self.raw.get(key)
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def schema_types(parameter: dict[str, Any]) -> set[str]:
    """The JSON types a parameter's schema names directly (``type: [string, array]`` -> both)."""
    declared = parameter.get("type")
    if isinstance(declared, str):
        return {declared}
    return {t for t in declared if isinstance(t, str)} if isinstance(declared, list) else set()


@cache
def known_tool_keys() -> tuple[str, ...]:
    return tuple(schema("tool")["$defs"]["tool"]["properties"])
