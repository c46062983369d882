"""Markdown rendered as it streams: every line once, rendered, whatever the chunks; read back through a
terminal emulator, so what is checked is what a person would see."""

from __future__ import annotations

import io
import re

import pytest

from nami_yaml.cli.markdown import MarkdownStream
from tests.cli.terminal import screen_lines
from tests.cli.test_terminal import ANSWER

WIDTH = 80


def rendered(text: str, chunk: int | None) -> tuple[str, list[str]]:
    out = io.StringIO()
    stream = MarkdownStream(out, width=WIDTH)
    pieces = [text] if chunk is None else [text[i:i + chunk] for i in range(0, len(text), chunk)]
    for piece in pieces:
        stream.feed(piece)
    stream.close()
    return out.getvalue(), screen_lines(out.getvalue(), columns=WIDTH, rows=24)


@pytest.mark.parametrize("chunk", [1, 3, 7, 40])
def test_streamed_in_any_chunks_the_screen_is_the_same_as_all_at_once(chunk: int) -> None:
    long_answer = ANSWER + "".join(f"\n{n}. point number {n} with **bold** words\n" for n in range(1, 40))
    _, whole = rendered(long_answer, None)
    _, streamed = rendered(long_answer, chunk)
    assert streamed == whole  # scrollback included: nothing printed twice, nothing left over
    assert "• a crash on empty input" in whole and "**" not in "\n".join(whole)


def test_the_first_words_show_before_the_line_is_complete() -> None:
    out = io.StringIO()
    stream = MarkdownStream(out, width=WIDTH)
    stream.feed("Hel")
    assert out.getvalue() == "Hel"
    stream.feed("lo **world**")
    assert screen_lines(out.getvalue(), WIDTH, 24)[0] == "Hello **world**"  # plain while it grows
    stream.feed("\n")
    assert screen_lines(out.getvalue(), WIDTH, 24)[0] == "Hello world"  # rendered once complete
    assert "\x1b[1mworld" in out.getvalue()


def test_table_rows_stay_plain_until_the_table_ends() -> None:
    out = io.StringIO()
    stream = MarkdownStream(out, width=WIDTH)
    stream.feed("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert screen_lines(out.getvalue(), WIDTH, 24)[2] == "| 1 | 2 |"
    stream.feed("\nafter\n")
    lines = screen_lines(out.getvalue(), WIDTH, 24)
    assert not any("|" in line for line in lines)
    assert [line.split() for line in lines[:3]][0] == ["a", "b"] and lines[2].split() == ["1", "2"]
    assert "after" in lines


def test_pipes_that_are_no_table_stay_text() -> None:
    _, lines = rendered("| not a table\nnext\n", None)
    assert lines[:2] == ["| not a table", "next"]


def test_a_line_taller_than_the_screen_is_left_plain_not_erased() -> None:
    words = [f"w{n}" for n in range(700)]  # about 40 rows of 80 columns: more than the 25 a file console has
    raw, lines = rendered(" ".join(words) + "\n\nend\n", 5)
    moves_up = [int(n) for n in re.findall(r"\x1b\[(\d+)A", raw)]
    assert max(moves_up, default=0) < 25  # never reaches above the screen
    text = " ".join(lines)
    assert all(text.count(f" {w} ") + text.startswith(w + " ") == 1 for w in ("w0", "w350", "w698"))
    assert "end" in lines


def test_control_characters_from_the_model_are_shown_not_obeyed() -> None:
    raw, lines = rendered("copy \x1b]52;c;ZXZpbA==\x07 this\x1b[2J\n", 4)
    assert "\x1b]" not in raw and "\x07" not in raw and "\x1b[2J" not in raw
    assert lines[0] == "copy \\x1b]52;c;ZXZpbA==\\x07 this\\x1b[2J"


@pytest.mark.parametrize("text", [
    "pay &#x202E;gpj.exe&#x202C; now",  # right-to-left override: the name reads backwards
    "# &#8238;heading",
    "hidden &#xE0041;&#xE0042; tag characters and a zero&#x200B;width space",
    "| a | b |\n|---|---|\n| &#x202E;cell | &#x3164; |",
    "[label](http://x/&#x202E;y) and ![&#x202E;alt](z.png)",
])
def test_character_references_cannot_smuggle_invisible_characters(text: str) -> None:
    # markdown-it turns &#x202E; into U+202E itself after nami escaped the text it was given.
    raw, _ = rendered(text + "\n", None)
    for character in ("\u202e", "\u202c", "\U000e0041", "\u200b", "\u3164"):
        assert character not in raw
    assert "\\u202e" in raw or "\\U000e0041" in raw or "\\u3164" in raw or "%E2%80%AE" in raw


def test_code_is_highlighted_line_by_line_and_fences_stay() -> None:
    raw, lines = rendered("```python\nx = 'a'\n```\n", 2)
    assert lines[:3] == ["```python", "x = 'a'", "```"]
    assert re.search(r"\x1b\[[0-9;]*m'a'", raw) or re.search(r"\x1b\[[0-9;]*m'\x1b", raw)
