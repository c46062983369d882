"""`nami sessions show`: a session as text, counts said as a person would say them."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.session.loader import LoadedSession
from nami_yaml.session.show import RESULT_LINES, session_lines


def test_a_session_shown_counts_one_more_line_as_one(tmp_path: Path) -> None:
    result = "\n".join(f"row {n}" for n in range(RESULT_LINES + 1))
    session = LoadedSession(tmp_path / "s.jsonl", {"id": "s"}, [], [
        {"type": "message", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}},
        {"type": "message", "message": {"role": "tool", "tool_call_id": "c1", "content": result}},
        {"type": "replace", "reason": "clear", "messages": [{"role": "system", "content": "s"}]}])
    lines = session_lines(session)
    assert "    ← … 1 more line" in lines
    assert "── history replaced (clear): 1 message ──" in lines
