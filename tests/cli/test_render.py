"""What the human view writes: escaped control characters, the answer alone on stdout."""

from __future__ import annotations

import io

from nami_yaml.agent.events import FinalEvent, MessageEvent, TextDelta, ToolCallEvent, ToolResultEvent
from nami_yaml.cli.render import HumanRenderer


def test_terminal_escapes_from_tools_and_model_are_shown_not_obeyed() -> None:
    out, err = io.StringIO(), io.StringIO()
    render = HumanRenderer(out, err, live_stdout=False)
    render(ToolCallEvent("c1", "bash", {"command": "x"}, "bash command=\"x\""))
    render(ToolResultEvent("c1", "bash", False, "boom \x1b]52;c;ZXZpbA==\x07 done", {"exit_code": 1}))
    render(TextDelta("ans\x1b[2Kwer"))
    render(MessageEvent("ans\x1b[2Kwer"))
    render(FinalEvent("ans\x1b[2Kwer", "answered", {"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 0}))
    render.answer("ans\x1b[2Kwer")
    assert "\x1b" not in err.getvalue() + out.getvalue() and "\x07" not in err.getvalue()
    assert "\\x1b]52;c;ZXZpbA==\\x07" in err.getvalue()
    assert out.getvalue() == "ans\\x1b[2Kwer\n"
    assert "tokens: 5 in, 2 out" in err.getvalue()


def test_json_events_carry_no_live_control_characters() -> None:
    import json as jsonlib

    from nami_yaml.cli.render import JsonRenderer

    out = io.StringIO()
    render = JsonRenderer(out)
    render(TextDelta("model says \u009b2J and \u202eevil\U000e0041"))
    render(ToolResultEvent("c1", "bash", True, "out \x1b[2K\u2800", {"exit_code": 0}))
    text = out.getvalue()
    for char in ("\u009b", "\u202e", "\U000e0041", "\x1b", "\u2800"):
        assert char not in text
    first, second = (jsonlib.loads(line) for line in text.splitlines())
    assert first["text"] == "model says \u009b2J and \u202eevil\U000e0041" and second["content"] == "out \x1b[2K\u2800"
