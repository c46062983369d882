"""The status line: drawn after a moment, redrawn in place, gone when the wait ends or output arrives."""

from __future__ import annotations

import io
import time
import types

from nami_yaml.cli.status import CLEAR, StatusLine, elapsed
from nami_yaml.cli.style import Paint
from tests.cli.terminal import screen_lines


def wait_for(condition, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_line_shows_what_is_awaited_then_is_erased() -> None:
    err = io.StringIO()
    status = StatusLine(err, Paint(False), details=lambda: "step 2 · 1,234 tokens")
    status.show("running bash")
    wait_for(lambda: "running bash" in err.getvalue())
    assert "running bash · 0." in err.getvalue() and "· step 2 · 1,234 tokens" in err.getvalue()
    status.hide()
    status.close()
    assert err.getvalue().endswith(CLEAR)
    assert screen_lines(err.getvalue(), 80, 5) == ["", "", "", "", ""]  # nothing left on screen


def test_a_short_wait_draws_nothing() -> None:
    err = io.StringIO()
    status = StatusLine(err, Paint(False))
    status.show("thinking")
    status.hide()
    time.sleep(0.3)
    status.close()
    assert err.getvalue() == ""


def test_streaming_output_hides_it_until_a_pause_at_the_start_of_a_line() -> None:
    err = io.StringIO()
    at_start = [False]
    status = StatusLine(err, Paint(False), at_line_start=lambda: at_start[0])
    status.show("thinking")
    wait_for(lambda: "thinking" in err.getvalue())
    status.streaming()
    assert err.getvalue().endswith(CLEAR)  # erased as soon as output arrives
    drawn = len(err.getvalue())
    time.sleep(1.3)  # paused, but mid-line: a spinner there would break the line
    assert err.getvalue()[drawn:] == ""
    at_start[0] = True
    wait_for(lambda: "thinking" in err.getvalue()[drawn:])
    status.close()


def test_a_paused_line_stays_away_while_a_question_is_asked() -> None:
    err = io.StringIO()
    status = StatusLine(err, Paint(False))
    status.show("running edit_file")
    wait_for(lambda: "running" in err.getvalue())
    with status.paused():
        mark = len(err.getvalue())
        time.sleep(0.4)
        assert "running" not in err.getvalue()[mark:]
    wait_for(lambda: "running" in err.getvalue()[mark:])
    status.close()


def test_elapsed_time_reads_naturally() -> None:
    assert elapsed(3.25) == "3.2s" and elapsed(65) == "1m 05s"


def test_a_tool_name_from_the_model_is_shown_escaped() -> None:
    # The model names the tool it calls; an unknown name is still announced while it waits.
    err = io.StringIO()
    status = StatusLine(err, Paint(False))
    status.show("running \x1b]52;c;ZXZpbA==\x07\u202e")
    wait_for(lambda: "running" in err.getvalue())
    status.close()
    assert "\x1b]52" not in err.getvalue() and "\x07" not in err.getvalue() and "\u202e" not in err.getvalue()
    assert "running \\x1b]52;c;ZXZpbA==\\x07\\u202e" in err.getvalue()


def test_the_time_at_a_question_is_not_counted(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The elapsed time is the model's and the tools', not the person's answering an approval (issue 41)."""
    import nami_yaml.cli.status as status_module

    clock = [1000.0]
    # The status line's own clock only (a fake one), not the time module the rest of the process reads.
    monkeypatch.setattr(status_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    err = io.StringIO()
    status = StatusLine(err, Paint(False))
    status.show("running bash")
    clock[0] += 2.0
    with status.paused():
        clock[0] += 300.0  # five minutes at the prompt
    clock[0] += 1.0
    with status.lock:
        status._tick()  # draw once, now (the clock is a fake one)
    status.close()
    assert "running bash · 3.0s" in err.getvalue()
