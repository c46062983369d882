"""Skills: folders with a SKILL.md whose front matter gives a ``name`` and a ``description``. Only those go
into the system prompt; the model reads the body with the ``skill`` tool when it uses one (Pi's and
Anthropic's idea: a capability costs a line until it is needed).

The front matter is the Agent Skills specification's (agentskills.io, docs/conventions.md): what nami
cannot use is an error (no name or description, a name no tool call could carry, a description past 1,024
characters); what departs from the specification but loads elsewhere is a warning `nami check` reports
(a name with upper-case letters or underscores, a name other than its folder's, a compatibility past 500
characters, metadata that is not text by text, keys the specification does not define), so a skill copied
from another agent's project works unchanged. ``license``, ``compatibility`` and ``metadata`` are kept;
``allowed-tools`` names the tools the skill uses (builtins/skill_tools.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nami_yaml.config.loaded import AGENTS_SKILLS, loaded_files
from nami_yaml.errors import ERROR, WARNING, Problem, SpecError
from nami_yaml.paths import path_for_messages
from nami_yaml.spec.yamlpos import parse_yaml, read_source

if TYPE_CHECKING:
    from nami_yaml.config.effective import Effective

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SPEC_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # the specification's: lower-case, single inner hyphens
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
_FENCE = re.compile(r"^---[ \t]*$", re.M)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    file: Path  # the SKILL.md
    license: str | None = None
    compatibility: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()
    allowed_tools: tuple[str, ...] = ()  # as written (``Bash(git:*)``, ``Read``); mapped when it is read

    @property
    def folder(self) -> Path:
        return self.file.parent

    def body(self) -> str:
        """The instructions after the front matter."""
        text = read_source(self.file)
        match = _front_matter(text)
        return (text[match[1]:] if match else text).strip()


def _front_matter(text: str) -> tuple[str, int] | None:
    """The YAML between a first line ``---`` and the next ``---`` line, and where the body starts."""
    if not text.startswith("---"):
        return None
    fences = list(_FENCE.finditer(text))
    if len(fences) < 2 or fences[0].start() != 0:
        return None
    return text[fences[0].end():fences[1].start()], fences[1].end()


def read_skill(file: Path) -> tuple[Skill | None, list[Problem]]:
    """The skill of ``file`` (None when it has errors) and every problem found, warnings included."""
    name = path_for_messages(file)
    try:
        text = read_source(file)
    except (OSError, ValueError) as exc:
        return None, [Problem(name, 1, 1, "$", f"cannot read skill: {exc}")]
    found = _front_matter(text)
    if found is None:
        return None, [Problem(name, 1, 1, "$", "a SKILL.md starts with front matter: a '---' line, "
                                               "name: and description:, then a '---' line")]
    # The front matter starts with the newline after the first '---', so positions point into the file.
    doc, problems = parse_yaml(found[0], name)
    if doc is None:
        return None, problems
    if not isinstance(doc.value, dict):
        return None, [*problems, doc.problem((), "the front matter must be a mapping with name and description")]
    data = doc.value
    problems.extend(doc.problem((), f"missing {key}") for key in ("name", "description") if key not in data)
    skill_name, description = data.get("name"), data.get("description")
    if "name" in data and not (isinstance(skill_name, str) and NAME.match(skill_name)):
        problems.append(doc.problem(("name",), "name must be 1-64 letters, digits, _ or -"))
    if "description" in data and not (isinstance(description, str) and description.strip()):
        problems.append(doc.problem(("description",), "description must be non-empty text"))
    elif isinstance(description, str) and len(description) > MAX_DESCRIPTION:
        problems.append(doc.problem(("description",), f"description is longer than {MAX_DESCRIPTION} characters: "
                                                      "it goes into every request; put the rest in the body"))
    if any(problem.is_error for problem in problems):
        return None, problems
    problems += _spec_warnings(doc, data, file)
    return Skill(str(skill_name), " ".join(str(description).split()), file.resolve(),
                 license=_text(data.get("license")), compatibility=_text(data.get("compatibility")),
                 metadata=tuple((str(k), str(v)) for k, v in data.get("metadata", {}).items())
                 if isinstance(data.get("metadata"), dict) else (),
                 allowed_tools=allowed_tools(data.get("allowed-tools"))), problems


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def allowed_tools(value: object) -> tuple[str, ...]:
    """``allowed-tools`` as the specification takes it: a space-separated string or a list of strings. A
    space inside parentheses belongs to its entry (``Bash(git log:*)``)."""
    if isinstance(value, list):
        return tuple(str(item).strip() for item in value if str(item).strip())
    if not isinstance(value, str):
        return ()
    return tuple(entry for entry in re.findall(r"[^\s(]+(?:\([^)]*\))?", value) if entry)


def _spec_warnings(doc: Any, data: dict[str, Any], file: Path) -> list[Problem]:
    """Where the front matter departs from the Agent Skills specification, as warnings (see the module)."""
    def warn(path: tuple[str, ...], message: str, key: bool = False) -> Problem:
        return doc.problem(path, message, key=key, severity=WARNING)

    found: list[Problem] = []
    name = str(data["name"])
    if not SPEC_NAME.match(name):
        found.append(warn(("name",), "the Agent Skills specification takes lower-case letters, digits and single "
                                     "hyphens inside (other agents may not load this skill)"))
    if name != file.parent.name:
        found.append(warn(("name",), f"name {name!r} does not match its folder {file.parent.name!r}: the Agent "
                                     "Skills specification requires them equal (other agents may not load it)"))
    compatibility = data.get("compatibility")
    if "compatibility" in data and not (isinstance(compatibility, str) and 0 < len(compatibility) <= MAX_COMPATIBILITY):
        found.append(warn(("compatibility",), f"compatibility must be text of 1-{MAX_COMPATIBILITY} characters"))
    metadata = data.get("metadata")
    if "metadata" in data and not (isinstance(metadata, dict)
                                   and all(isinstance(v, str) for v in metadata.values())):
        found.append(warn(("metadata",), "metadata must map keys to text (quote numbers: version: \"1.0\")"))
    if "license" in data and not isinstance(data["license"], str):
        found.append(warn(("license",), "license must be text (a license's name, or a bundled file's)"))
    tools = data.get("allowed-tools")
    if "allowed-tools" in data and not (isinstance(tools, str) or
                                        (isinstance(tools, list) and all(isinstance(t, str) for t in tools))):
        found.append(warn(("allowed-tools",), "allowed-tools must be a space-separated string or a list of strings"))
    for key in data:
        if key not in SPEC_KEYS:
            found.append(warn((str(key),), f"{key!r} is not in the Agent Skills specification: nami ignores it "
                                           f"(keys: {', '.join(SPEC_KEYS)})", key=True))
    return found


def load_skills(effective: Effective) -> list[Skill]:
    """Every skill agent.yaml lists (paths already resolved and checked by the config reader) and those found
    under .agents/skills, in order, as config/loaded.py lists them (the files trust covers); raise SpecError
    with every error found (the warnings are `nami check`'s: :func:`check_skills`)."""
    skills, problems = check_skills(effective)
    errors = [problem for problem in problems if problem.is_error]
    if errors:
        raise SpecError(errors)
    return skills


def check_skills(effective: Effective) -> tuple[list[Skill], list[Problem]]:
    """The skills that load, and every problem of them, warnings included. Two skills of one name are an
    error, unless the later was found under a .agents/skills folder: the first keeps the name (agent.yaml's
    skills:, then the project's .agents/skills, then ~/.agents/skills) and a warning says so. A skill found
    there that cannot load is left out with a warning: a broken skill shared with other agents does not
    stop nami."""
    skills: list[Skill] = []
    problems: list[Problem] = []
    seen: dict[str, Path] = {}
    for file in loaded_files(effective).skills:
        skill, found = read_skill(file)
        shadowed = file.parent.parent.parts[-2:] == AGENTS_SKILLS.parts
        if shadowed:  # found by convention, maybe shared with other agents: a broken one is left out, not fatal
            found = [replace(p, severity=WARNING, message=f"{p.message} (this skill is left out)") if p.is_error
                     else p for p in found]
        problems.extend(found)
        if skill is None:
            continue
        if skill.name in seen:
            problems.append(Problem(path_for_messages(file), 2, 1, "$.name",
                                    f"duplicate skill name '{skill.name}': also in {path_for_messages(seen[skill.name])}"
                                    + (", which is the one loaded" if shadowed else ""),
                                    WARNING if shadowed else ERROR))
            continue
        seen[skill.name] = file
        skills.append(skill)
    return skills, problems
