"""A batch task may name a session to replay (``replay: SESSION_FILE``): recorded incidents as an evaluation
suite, each run again with tools served from the recording, then checked."""

from __future__ import annotations

import shutil
import sys

from nami_yaml import Agent
from nami_yaml.testing import ScriptedModel, call, text, tool_calls
from tests.app.test_replay import TOOLS
from tests.batch.conftest import BatchProject


def test_a_replay_task_serves_recorded_results_and_is_checked(batch_project: BatchProject) -> None:
    folder = batch_project.folder
    marker = folder / "marker.txt"
    (folder / "tools").mkdir()
    (folder / "tools" / "ops.yaml").write_text(TOOLS.replace("PYTHON", sys.executable).replace("MARKER", str(marker)))
    batch_project.config.write_text(batch_project.config.read_text() + "tools: {files: [tools/]}\n")
    agent = Agent.from_config(str(batch_project.config), client=ScriptedModel(
        [tool_calls(call("pods", {"namespace": "prod"})), text("prod is down")]), record_session=True)
    agent.run("[incident] why is prod down?")
    assert agent.session_file is not None
    shutil.copy(agent.session_file, folder / "incident.jsonl")
    agent.close()
    assert marker.read_text().split() == ["prod"]

    batch_project.server.add_task("[incident]", tool_calls(call("pods", {"namespace": "prod"})),
                                  text("pods of prod run 1: crash loop"))
    tasks = batch_project.tasks([{"id": "incident", "replay": "incident.jsonl",
                                  "checks": [{"answer_matches": "pods of prod run 1"}]}])
    result, [row] = batch_project.run(str(tasks))
    assert result.exit_code == 0, result.output
    assert row["status"] == "answered" and row["passed"] is True
    assert marker.read_text().split() == ["prod"]  # served from the recording: the tool did not run again
    # The model saw the recorded result: the fake server got it in the second request.
    assert "pods of prod run 1" in str(batch_project.server.requests[-1]["messages"])


def test_a_task_needs_a_prompt_or_a_replay_not_both(batch_project: BatchProject) -> None:
    both = batch_project.tasks([{"id": "x", "prompt": "go", "replay": "s.jsonl"}])
    result, rows = batch_project.run(str(both))
    assert result.exit_code == 2 and "not both" in result.output and not rows
    neither = batch_project.tasks([{"id": "x"}])
    result, rows = batch_project.run(str(neither))
    assert result.exit_code == 2 and "a task needs a prompt, or a session to replay" in result.output
