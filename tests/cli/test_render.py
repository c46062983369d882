"""What the human view writes: escaped control characters, the answer alone on stdout."""

from __future__ import annotations

import io

import pytest

from nami_yaml.agent.events import FinalEvent, MessageEvent, TextDelta, ToolCallEvent, ToolResultEvent
from nami_yaml.cli.render import QUIET, VERBOSE, HumanRenderer
from nami_yaml.cli.style import Terminal


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


def tool_events(render: HumanRenderer, ok: bool, content: str, **details: object) -> None:
    render(ToolCallEvent("c1", "bash", {"command": "x"}, "bash command=\"x\""))
    render(ToolResultEvent("c1", "bash", ok, content, dict(details)))


def test_results_show_their_first_lines_and_a_count_of_the_rest() -> None:
    err = io.StringIO()
    render = HumanRenderer(io.StringIO(), err, live_stdout=False)
    tool_events(render, True, "\n".join(f"row {n}" for n in range(10)))
    assert err.getvalue().splitlines()[1:] == ["  ✓ bash: 10 lines", "    │ row 0", "    │ row 1", "    │ row 2",
                                               "    │ row 3", "    … 6 more lines"]


@pytest.mark.parametrize("columns", [40, 200])
def test_a_one_line_result_is_its_summary_cut_to_the_terminal(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    long, short = "word " * 60, "a  short\tline"
    err = io.StringIO()
    render = HumanRenderer(io.StringIO(), err, live_stdout=False)
    tool_events(render, True, long)
    tool_events(render, True, short)
    summary, short_summary = err.getvalue().splitlines()[1], err.getvalue().splitlines()[3]
    room = columns - 6 - len("bash")  # the line's indent, and the name before the text
    assert summary == "  ✓ bash: " + ("word " * 60).strip()[: room - 1] + "…"
    assert short_summary == "  ✓ bash: a short line"  # its spacing folded, whatever the width


def test_verbose_shows_whole_results_and_quiet_none() -> None:
    content = "\n".join(f"row {n}" for n in range(10))
    err = io.StringIO()
    tool_events(HumanRenderer(io.StringIO(), err, live_stdout=False, verbosity=VERBOSE), True, content)
    assert "    │ row 9" in err.getvalue() and "more lines" not in err.getvalue()
    err = io.StringIO()
    quiet = HumanRenderer(io.StringIO(), err, live_stdout=False, verbosity=QUIET)
    tool_events(quiet, True, content)
    quiet(FinalEvent("done", "answered", {"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 0}))
    assert err.getvalue() == ""


def test_a_failed_call_stands_out() -> None:
    err = io.StringIO()
    render = HumanRenderer(io.StringIO(), err, live_stdout=False, term=Terminal(color_err=True))
    tool_events(render, False, "Error: boom\nmore detail", exit_code=2)
    assert "\x1b[31;1m  ✗ bash: Error: boom (exit 2)\x1b[0m" in err.getvalue()
    assert "\x1b[2m    │ more detail\x1b[0m" in err.getvalue()
    plain = io.StringIO()
    tool_events(HumanRenderer(io.StringIO(), plain, live_stdout=False), False, "Error: boom")
    assert "\x1b" not in plain.getvalue() and "  ✗ bash: Error: boom" in plain.getvalue()


def test_the_answer_is_rendered_only_where_colours_go() -> None:
    out = io.StringIO()
    HumanRenderer(out, io.StringIO(), live_stdout=False, term=Terminal(color_out=True, markdown=True)).answer("**hi**")
    assert out.getvalue() == "\x1b[1mhi\x1b[0m\n"
    out = io.StringIO()
    HumanRenderer(out, io.StringIO(), live_stdout=False).answer("**hi**")
    assert out.getvalue() == "**hi**\n"


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


def test_text_streams_on_stderr_only_where_a_person_watches_it() -> None:
    for watched in (True, False):
        out, err = io.StringIO(), io.StringIO()
        render = HumanRenderer(out, err, live_stdout=False, mirror=watched)
        render(TextDelta("the answer"))
        render(MessageEvent("the answer"))
        render(FinalEvent("the answer", "answered", {"prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 0}))
        render.answer("the answer")
        assert out.getvalue() == "the answer\n"
        assert ("the answer" in err.getvalue()) is watched
