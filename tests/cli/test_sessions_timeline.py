"""``nami sessions export ID --timeline``: a session with a refused call, an approval and a sub-agent, as
Markdown, JSON and HTML, in order, joined with the audit log's decisions, and rendered safely."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nami_yaml import Agent, Decision
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import nami, write

AGENT_YAML = """\
model: {provider: custom, name: fake-model}
tools: {builtin: [read_file, write_file, bash, list_dir]}
rules:
  - tool: bash
    command: rm
    decision: deny
    reason: use the trash
agents:
  reviewer:
    description: Reviews a file.
    tools: [read_file, bash]
"""
HOSTILE = "<script>alert(1)</script>\n# not a heading\n```\n[link](http://evil)"


@pytest.fixture
def session_id(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NAMI_API_KEY", "test-key")
    write(workdir / "agent.yaml", AGENT_YAML)
    write(workdir / "notes.txt", HOSTILE + "\n")
    with FakeOpenAIServer() as server:
        server.add_task("[p]", tool_calls(call("bash", {"command": "rm -rf build"})),
                        tool_calls(call("write_file", {"path": "r.txt", "content": "r"}),
                                   content="I will write the report first."),
                        tool_calls(call("agent__reviewer", {"task": "[c] review notes.txt"})),
                        text("Done: reviewed."))
        server.add_task("[c]", tool_calls(call("read_file", {"path": "notes.txt"})), text("notes look odd"))
        agent = Agent.from_config(base_url=server.base_url, trust=True, record_session=True,
                                  approve=lambda request: Decision.allow(source="user ann"))
        assert agent.run("[p] clean up and get notes reviewed").final_text == "Done: reviewed."
        found = agent.session_id
        agent.close()
    return found


def test_the_timeline_shows_each_step_in_order(session_id: str) -> None:
    result = nami("sessions", "export", session_id, "--timeline")
    assert result.exit_code == 0, result.output
    page = result.stdout
    order = ["**task**", "[p] clean up", "call ` bash `", "denied, deny by ` rule agent.yaml:4:5 ` (` use the trash `)",
             "**step 2**", "I will write the report first.", "call ` write_file `",
             "approval: asked by ` permissions.write `", "answered ` allow ` by ` user ann ` at ",
             "call ` agent__reviewer `", "    - **sub-agent** ` reviewer `: ` answered `", "      - **task**",
             "[c] review notes.txt", "      - **step 1**", "call ` read_file `", ": ran, allow\n",
             "notes look odd", "\n- **answer**", "Done: reviewed.", "run ended at"]
    at = 0
    for piece in order:  # each after the one before
        found = page.find(piece, at)
        assert found != -1, (piece, page[at:])
        at = found + len(piece)
    assert re.search(r"\*\*step 1\*\* at ` \d{4}-\d\d-\d\dT", page)
    # The hostile file sits inside a fence longer than its own: no heading, no link, no HTML escapes it.
    assert re.search(r"^ +````$", page, re.M) and not re.search(r"^\s*# not a heading", page, re.M)


def test_the_timeline_as_json_and_html(session_id: str, tmp_path: Path) -> None:
    built = json.loads(nami("sessions", "export", session_id, "--timeline", "--json").stdout)
    kinds = [event["kind"] for event in built["events"]]
    assert kinds == ["prompt", "step", "step", "step", "answer", "end"]
    refused = built["events"][1]["calls"][0]
    assert (refused["status"], refused["decided_by"], refused["reason"]) == ("denied", "rule agent.yaml:4:5", "use the trash")
    approved = built["events"][2]["calls"][0]
    assert approved["approval"]["answered_by"] == "user ann" and approved["approval"]["at"]
    child = built["events"][3]["calls"][0]["subagent"]["timeline"]
    assert child["agent"] == "reviewer" and child["events"][1]["calls"][0]["decision"] == "allow"
    assert child["events"][1]["calls"][0]["result"][0].endswith("\t<script>alert(1)</script>")
    page_path = tmp_path / "timeline.html"
    assert nami("sessions", "export", session_id, "--timeline", "--html", str(page_path)).exit_code == 0
    page = page_path.read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "default-src 'none'" in page and page.index("denied") < page.index("user ann") < page.index("reviewer")


def test_json_goes_with_timeline(session_id: str) -> None:
    assert nami("sessions", "export", session_id, "--json").exit_code == 2
    assert nami("sessions", "export", session_id).exit_code == 2
