"""A run on a terminal with ``approvals.via: queue`` asks on the terminal and keeps the question in the
queue: an answer from another shell ends the question on the screen (the first answer wins)."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.approvals.conftest import approvals, pending_ids, trust
from tests.cli.terminal import Terminal


def asking(project: Path, server: FakeOpenAIServer, answer: str) -> tuple[Terminal, str]:
    """A run on a pty, showing its question; the id of the same question in the queue."""
    trust(project)
    server.add(tool_calls(call("make_marker", {"name": "marker.txt"})), text(answer))
    terminal = Terminal(server, ["run", "make the marker"], cwd=project)
    terminal.expect(r"Run it\?")
    [approval_id] = pending_ids(project / "queue")
    return terminal, approval_id


def test_an_answer_from_the_queue_ends_the_question_on_the_terminal(project: Path,
                                                                   fake_openai: FakeOpenAIServer) -> None:
    terminal, approval_id = asking(project, fake_openai, "made it")
    try:
        answered = approvals(project, "approve", approval_id)
        assert answered.returncode == 0, answered.stderr
        terminal.expect("answered from the queue: allow")
        assert terminal.finish() == 0
    finally:
        terminal.close()
    assert (project / "marker.txt").exists()
    assert "made it" in terminal.text()


def test_a_key_on_the_terminal_answers_and_the_queue_is_told(project: Path, fake_openai: FakeOpenAIServer) -> None:
    terminal, approval_id = asking(project, fake_openai, "fine")
    try:
        terminal.send("n")
        assert terminal.finish() == 0
    finally:
        terminal.close()
    assert not (project / "marker.txt").exists()
    late = approvals(project, "approve", approval_id)
    assert late.returncode == 2 and "answered already (denied)" in late.stderr
