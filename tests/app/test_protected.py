"""Where a write needs exec approval because of this configuration (app/protected.py)."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.app.protected import TOOL_CODE, protected_paths
from nami_yaml.config.settings import load_settings
from nami_yaml.project_request import ProjectRequest
from nami_yaml.sensitive_paths import sensitive_reason
from tests.helpers import write


def test_writing_the_code_a_tool_runs_from_outside_its_folder_needs_exec_approval(workdir: Path) -> None:
    """Fifth review: with `write: allow`, writing scripts/report.py and calling a `risk: read` tool whose
    command is `python3 scripts/report.py` ran the model's code without an exec approval."""
    write(workdir / "scripts" / "report.py", "print('a report')\n")
    write(workdir / "tools" / "report.yaml", "name: report\ndescription: R.\nrisk: read\n"
                                             "command: [python3, scripts/report.py]\n")
    write(workdir / "agent.yaml", "tools: {files: [tools/]}\n")
    protected = protected_paths(load_settings(ProjectRequest(env={}, cwd=workdir, user_config=False)))
    assert sensitive_reason(workdir / "scripts" / "report.py", protected) == TOOL_CODE
    assert sensitive_reason(workdir / "scripts" / "helper.py", protected) == TOOL_CODE  # imported from beside it
    assert sensitive_reason(workdir / "notes.txt", protected) is None


def test_named_agents_and_their_prompts_are_configuration_like_agent_yaml(workdir: Path) -> None:
    """Sixth review (issue 40, item 7): agents/*.yaml and their prompt files were plain writes."""
    from nami_yaml.app.protected import NAMED_AGENTS

    write(workdir / "agent.yaml", "tools: {builtin: [read_file]}\nagents:\n  triage:\n    description: Triage.\n"
                                  "    system: prompts/triage.md\n")
    write(workdir / "agents" / "oncall.yaml", "description: On call.\n")
    write(workdir / "prompts" / "triage.md", "You triage.\n")
    protected = protected_paths(load_settings(ProjectRequest(env={}, cwd=workdir, user_config=False)))
    assert sensitive_reason(workdir / "agents" / "oncall.yaml", protected) == NAMED_AGENTS
    assert sensitive_reason(workdir / "agents" / "new.yaml", protected) == NAMED_AGENTS  # one made later too
    assert sensitive_reason(workdir / "prompts" / "triage.md", protected) == "it is a named agent's system prompt"
    assert sensitive_reason(workdir / "prompts" / "notes.md", protected) is None
