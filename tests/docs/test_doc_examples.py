"""Every ```yaml block in README.md and docs/ is loaded: tool files by the tool loader (warnings count),
agent configs by the agent schema. A block whose first line is ``# invalid`` must produce problems instead; one
whose first line is ``# not a nami file: …`` is another program's (checked by its page's own test)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nami_yaml.registry.loader import check_tools
from nami_yaml.runtime import Target, TargetSet
from nami_yaml.spec.tasks import check_task_file
from nami_yaml.spec.validate import problems_for, validator
from nami_yaml.spec.yamlpos import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


# The targets the docs declare (permissions.md, config.md), for their tool examples with `target: true`.
DOC_TARGETS = TargetSet(tuple(Target(name, {}, {"context": context, "namespace": namespace})
                              for name, context, namespace in (("dev", "dev-eu", "shop-dev"),
                                                               ("staging", "stg-eu", "shop"),
                                                               ("prod", "prod-eu", "shop"))))
OTHER_PROGRAM = "# not a nami file:"  # another program's config (Goose's, in mcp.md): its page's test checks it


def blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for index, match in enumerate(BLOCK.finditer(doc.read_text(encoding="utf-8"))):
            if not match.group(1).startswith(OTHER_PROGRAM):
                found.append((f"{doc.name}#{index}", match.group(1)))
    return found


def is_tool_file(value: object) -> bool:
    return isinstance(value, dict) and ("name" in value or isinstance(value.get("tools"), list))


@pytest.mark.parametrize(("where", "text"), blocks(), ids=[w for w, _ in blocks()])
def test_doc_yaml_block_is_valid(where: str, text: str, tmp_path: Path) -> None:
    expect_invalid = text.startswith("# invalid")
    doc, problems = parse_yaml(text, where)
    assert doc is not None, problems
    if text.startswith("# agents/"):  # a named agent's own file (docs/agents.md)
        problems = problems_for(doc, doc.value, (), validator("agent", "named_agent"))
    elif is_tool_file(doc.value):
        file = tmp_path / "example.yaml"
        file.write_text(text, encoding="utf-8")
        tools, problems = check_tools([file], targets=DOC_TARGETS)
    elif isinstance(doc.value, dict) and "tasks" in doc.value:  # a nami batch task file
        file = tmp_path / "tasks.yaml"
        file.write_text(text, encoding="utf-8")
        _, problems = check_task_file(file)
    else:
        problems = problems_for(doc, doc.value, (), validator("agent"))
    if expect_invalid:
        assert problems, f"{where} is marked invalid but loads cleanly"
    else:
        assert problems == [], f"{where}: " + "\n".join(map(str, problems))


def test_docs_have_examples() -> None:
    assert len(blocks()) >= 10


def test_permission_rules_name_real_tools_and_parameters(tmp_path: Path) -> None:
    """The agent.yaml examples of permissions.md, with the tool files shown beside them: their rules name
    tools and parameters that exist, compile, and give plain command prefixes (what `nami check` checks)."""
    from nami_yaml.app.policy_check import open_for_deciding, project_policy_tests
    from nami_yaml.app.toolset import build_registry
    from nami_yaml.config.settings import load_settings
    from nami_yaml.policy.layers import rule_problems
    from nami_yaml.project_request import ProjectRequest

    parsed = [parse_yaml(text, where)[0] for where, text in blocks() if where.startswith("permissions.md#")]
    texts = [text for where, text in blocks() if where.startswith("permissions.md#")]
    (tmp_path / "tools").mkdir()
    for index, (doc, text) in enumerate(zip(parsed, texts, strict=True)):
        if doc is not None and is_tool_file(doc.value):
            (tmp_path / "tools" / f"example{index}.yaml").write_text(text, encoding="utf-8")
    checked = tested = 0
    for doc, text in zip(parsed, texts, strict=True):
        if doc is None or not isinstance(doc.value, dict) or "rules" not in doc.value or "tools" not in doc.value:
            continue
        (tmp_path / "agent.yaml").write_text(text, encoding="utf-8")
        effective = load_settings(ProjectRequest(config=str(tmp_path / "agent.yaml"), env={}, cwd=tmp_path, user_config=False))
        assert rule_problems(effective, build_registry(effective)) == [], text
        checked += 1
        if "policy_tests" in doc.value:  # the page's tests pass, decided as the model's calls are
            with open_for_deciding(tmp_path / "agent.yaml") as project:
                report = project_policy_tests(project)
            assert report.outcomes and [str(o.problem()) for o in report.failed] == [], text
            tested += 1
    assert checked >= 3 and tested >= 1
