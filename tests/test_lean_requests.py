"""The fixed part of every request stays small: the default system prompt plus the default tool definitions,
counted in the bytes the real client sends to the fake server (a count, not a timing), and the facts that
keep the model safe and correct are still in what is sent; the rest is in docs read on demand."""

from __future__ import annotations

import json
from pathlib import Path

from nami_yaml.app import open_project
from nami_yaml.testing import FakeOpenAIServer, text
from tests.helpers import run_nami

BUDGET = 4_200

# Facts a model must see without asking (each a phrase of a description as sent).
MUST_SAY = {
    "read_file": ["number and a tab, which are not part of the file", "2000 lines", "offset to continue"],
    "write_file": ["replace all of its content", "edit_file"],
    "edit_file": ["match exactly", "once (unless replace_all)", "the file is unchanged"],
    "list_dir": ["At most 500"],
    "grep": ["Python regular expression", "at most 200 lines", "Skips hidden, .gitignored and binary"],
    "glob": ["without a slash it matches names at any depth", "At most 500"],
    "bash": ["new shell", "stdin closed", "secret variables removed", "killed with its children at the timeout",
             "saved to a file the result names"],
    "fetch_url": ["public http(s)", "Internal addresses are refused: do not retry them under another spelling"],
}


def test_system_prompt_and_default_tools_fit_the_budget_as_sent(workdir: Path) -> None:
    with FakeOpenAIServer([text("hi")]) as server:
        result = run_nami(server, "run", "hi", cwd=workdir)
    assert result.returncode == 0, result.stderr
    raw = server.raw_requests[0].decode("utf-8")
    body = json.loads(raw)
    tools = json.dumps(body["tools"], ensure_ascii=False, separators=(",", ":"))
    system = json.dumps(body["messages"][0]["content"], ensure_ascii=False)
    assert tools in raw and system in raw  # exactly these characters went over the wire
    sent = len(body["messages"][0]["content"]) + sum(
        len(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in body["tools"])
    assert sent <= BUDGET, f"{sent} characters: over the budget of {BUDGET}"
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["read_file", "write_file", "edit_file", "list_dir", "grep", "glob", "bash", "fetch_url",
                     "tool_docs"]


def test_descriptions_keep_the_facts_that_matter_and_point_at_their_docs(workdir: Path) -> None:
    project = open_project(cwd=workdir)
    definitions = {d["function"]["name"]: d["function"]["description"] for d in project.registry.definitions()}
    for name, phrases in MUST_SAY.items():
        for phrase in phrases:
            assert phrase in definitions[name], f"{name}: {phrase!r} is missing"
        assert definitions[name].endswith(" Details: tool_docs.")
        docs = project.context.tool_docs[name].file
        assert docs is not None and docs.read_text().startswith(f"# {name}(")
        assert docs.read_text() not in json.dumps(project.registry.definitions())
