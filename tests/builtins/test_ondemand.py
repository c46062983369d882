"""Docs on demand and skills, end to end on the agent: absent from every request until the model asks
with tool_docs or skill, then read from the file, a command's output, or the SKILL.md body."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nami_yaml import Agent
from nami_yaml.app import open_project
from nami_yaml.config.trust import covered_files
from nami_yaml.errors import SpecError
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.helpers import write

GUIDE = "Deploy guide: always run the canary first, then promote with --all."


@pytest.fixture
def project(workdir: Path) -> Path:
    write(workdir / "tools" / "deploy.md", GUIDE + "\n")
    write(workdir / "tools" / "ops.yaml", """\
tools:
  - name: deploy
    description: Deploy a service.
    risk: read
    command: [echo, deployed]
    docs: deploy.md
  - name: version
    description: Show the tool's version.
    risk: read
    command: [echo, v1]
    env: {GREETING: hello}
    docs: [sh, -c, 'echo "usage: version ($GREETING, token=${MY_TOKEN:-removed})"']
  - name: chatty
    description: Has long docs.
    risk: read
    command: [echo]
    docs: [python3, -c, "print('x' * 100000)"]
""")
    write(workdir / "skills" / "release" / "SKILL.md",
          "---\nname: release\ndescription: Cut a release -\n  tag, changelog, announce.\n---\n\n"
          "# Releasing\n1. Bump the version.\n2. Tag it.\n")
    write(workdir / "skills" / "triage" / "SKILL.md",
          "---\nname: triage\ndescription: Sort new issues by area.\nlicense: MIT\n---\nLabel each issue.\n")
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [tools/]}\nskills: [skills]\n"
                                  "limits: {max_output: 2000}\n")
    return workdir


def agent(model: ScriptedModel, **env: str) -> Agent:
    return Agent.from_config("agent.yaml", client=model, env={"MY_TOKEN": "s3cret", **env})


def tool_results(model: ScriptedModel, request: int) -> list[str]:
    return [m["content"] for m in model.requests[request]["messages"] if m["role"] == "tool"]


def test_docs_are_read_on_demand_and_never_sent_before(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("tool_docs", {"name": "deploy"}), call("tool_docs", {"name": "version"}),
                                      call("tool_docs", {"name": "chatty"}), call("tool_docs", {"name": "deplyo"})),
                           text("ok")])
    agent(model).run("how do I deploy?")
    first = json.dumps(model.requests[0])
    assert GUIDE not in first and "usage: version" not in first
    tools = {t["function"]["name"]: t["function"] for t in model.requests[0]["tools"]}
    assert list(tools) == ["tool_docs", "skill", "deploy", "version", "chatty"]
    assert tools["deploy"]["description"] == "Deploy a service. Details: tool_docs."
    assert "docs" not in json.dumps(tools["deploy"]["parameters"])

    file_docs, command_docs, long_docs, unknown = tool_results(model, 1)
    assert file_docs == GUIDE + "\n"
    # the command ran like the tool's own processes: its env, secret-looking host variables removed
    assert command_docs == "usage: version (hello, token=removed)"
    assert len(long_docs) < 3000 and "omitted; full output:" in long_docs  # capped like any output
    assert unknown.startswith("Error: no docs for 'deplyo'; did you mean 'deploy'?")


def test_a_docs_command_is_killed_at_the_tools_timeout(workdir: Path) -> None:
    write(workdir / "slow.yaml", "name: slow\ndescription: S.\nrisk: read\ncommand: [echo]\ntimeout: 0.5\n"
                                 "docs: [sleep, '30']\n")
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [slow.yaml]}\n")
    model = ScriptedModel([tool_calls(call("tool_docs", {"name": "slow"})), text("ok")])
    Agent.from_config("agent.yaml", client=model).run("docs?")
    [result] = tool_results(model, 1)
    assert "timed out after 0.5 s" in result


def test_skills_are_listed_by_name_and_description_only(project: Path) -> None:
    model = ScriptedModel([tool_calls(call("skill", {"name": "release"})), text("ok")])
    with agent(model) as running:
        prompt = running.messages[0]["content"]
        running.run("cut a release")
    assert ("Skills (read one with the skill tool before you use it):\n"
            "- release: Cut a release - tag, changelog, announce.\n"
            "- triage: Sort new issues by area.\n\nWorkspace") in prompt
    assert "Bump the version" not in json.dumps(model.requests[0])
    [body] = tool_results(model, 1)
    assert body.startswith("# Releasing\n1. Bump the version.\n2. Tag it.")
    assert f"(Skill folder: {project / 'skills' / 'release'})" in body


def test_skill_problems_are_reported_with_their_place(project: Path) -> None:
    write(project / "skills" / "broken" / "SKILL.md", "---\nname: bad name\n---\nbody\n")
    with pytest.raises(SpecError) as caught:
        open_project("agent.yaml")
    text_ = str(caught.value)
    assert "skills/broken/SKILL.md:2:1: $: missing description" in text_
    assert "skills/broken/SKILL.md:2:7: $.name: name must be 1-64 letters" in text_

    write(project / "skills" / "broken" / "SKILL.md", "no front matter\n")
    with pytest.raises(SpecError, match="SKILL.md:1:1: \\$: a SKILL.md starts with front matter"):
        open_project("agent.yaml")

    write(project / "skills" / "broken" / "SKILL.md", "---\nname: triage\ndescription: again\n---\n")
    with pytest.raises(SpecError, match="duplicate skill name 'triage'"):
        open_project("agent.yaml")

    write(project / "agent.yaml", "skills: [skills, nowhere]\n")
    with pytest.raises(SpecError, match=r"agent.yaml:1:18: \$.skills\[1\]: 'nowhere' holds no SKILL.md"):
        open_project("agent.yaml")


def test_trust_covers_skills_and_docs(project: Path) -> None:
    effective = open_project("agent.yaml").settings
    effective.found_by = "found from the current folder"
    covered = covered_files(effective)
    assert project / "skills" / "release" / "SKILL.md" in covered and project / "tools" / "deploy.md" in covered


def test_without_docs_or_skills_neither_reader_is_added(workdir: Path) -> None:
    write(workdir / "t.yaml", "name: t\ndescription: T.\ncommand: [echo]\n")
    write(workdir / "agent.yaml", "tools: {builtin: [], files: [t.yaml]}\n")
    names: Any = open_project("agent.yaml").registry.names()
    assert names == ["t"]
