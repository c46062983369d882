"""Skills: folders with a SKILL.md whose front matter gives a ``name`` and a ``description``. Only those go
into the system prompt; the model reads the body with the ``skill`` tool when it uses one (Pi's and
Anthropic's idea: a capability costs a line until it is needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nami_yaml.config.loaded import loaded_files
from nami_yaml.errors import Problem, SpecError
from nami_yaml.paths import path_for_messages
from nami_yaml.spec.yamlpos import parse_yaml, read_source

if TYPE_CHECKING:
    from nami_yaml.config.effective import Effective

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DESCRIPTION = 1024
_FENCE = re.compile(r"^---[ \t]*$", re.M)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    file: Path  # the SKILL.md

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
    if problems:
        return None, problems
    return Skill(str(skill_name), " ".join(str(description).split()), file.resolve()), []


def load_skills(effective: Effective) -> list[Skill]:
    """Every skill agent.yaml lists (paths already resolved and checked by the config reader), in order,
    as config/loaded.py lists them (the files trust covers); raise SpecError with every problem found."""
    skills: list[Skill] = []
    problems: list[Problem] = []
    seen: dict[str, Path] = {}
    for file in loaded_files(effective).skills:
        skill, found = read_skill(file)
        problems.extend(found)
        if skill is None:
            continue
        if skill.name in seen:
            problems.append(Problem(path_for_messages(file), 2, 1, "$.name",
                                    f"duplicate skill name '{skill.name}': also in {path_for_messages(seen[skill.name])}"))
            continue
        seen[skill.name] = file
        skills.append(skill)
    if problems:
        raise SpecError(problems)
    return skills
