"""One decision per process about colours, rendering and the status line."""

from __future__ import annotations

import io

import pytest

from nami_yaml.cli.style import Paint, decide


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def streams(out_tty: bool = True, err_tty: bool = True, in_tty: bool = True) -> dict[str, io.StringIO]:
    return {"stdin": Tty() if in_tty else io.StringIO(), "stdout": Tty() if out_tty else io.StringIO(),
            "stderr": Tty() if err_tty else io.StringIO()}


def test_a_terminal_gets_colours_markdown_status_and_keys() -> None:
    term = decide(env={"TERM": "xterm-256color"}, **streams())
    assert (term.color_out, term.color_err, term.markdown, term.status, term.keys) == (True,) * 5


def test_a_pipe_gets_none_of_it_but_the_other_stream_keeps_its_own() -> None:
    term = decide(env={"TERM": "xterm"}, **streams(out_tty=False))
    assert not term.color_out and not term.markdown
    assert term.color_err and term.status  # stderr is still the terminal


@pytest.mark.parametrize("env,color", [({"TERM": "xterm", "NO_COLOR": "1"}, "auto"), ({"TERM": "xterm"}, "never"),
                                       ({"TERM": "dumb"}, "auto")])
def test_no_color_never_and_a_dumb_terminal_mean_plain_answers(env: dict[str, str], color: str) -> None:
    term = decide(color, env=env, **streams())
    assert not term.color_out and not term.color_err and not term.markdown
    assert term.status == (env["TERM"] != "dumb")  # a spinner is no colour; a dumb terminal cannot redraw


def test_always_colours_a_pipe_and_beats_no_color() -> None:
    term = decide("always", env={"TERM": "xterm", "NO_COLOR": "1"}, **streams(out_tty=False, err_tty=False))
    assert term.color_out and term.markdown and term.color_err
    assert not term.status  # a status line needs a terminal to redraw on


def test_plain_turns_everything_off() -> None:
    term = decide("always", plain=True, env={"TERM": "xterm"}, **streams())
    assert not (term.color_out or term.color_err or term.markdown or term.status)


def test_paint_adds_codes_only_when_enabled() -> None:
    assert Paint(True)("x", "red", "bold") == "\x1b[31;1mx\x1b[0m"
    assert Paint(False).red("x") == "x" and Paint(True)("") == ""
