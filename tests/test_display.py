"""Escaping untrusted text for the terminal: every invisible or control character, as text or JSON."""

from __future__ import annotations

import json
import sys
import unicodedata

from nami_yaml.display import command_line, plural, safe_json, visible, visible_line

# Characters that render as nothing although they are letters or symbols.
BLANK_LOOKING = "\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\U000e0100\ufe00"


def _invisible_code_points() -> list[str]:
    chars = [chr(cp) for cp in range(sys.maxunicode + 1)
             if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zl", "Zp", "Cs") and chr(cp) not in "\n\t"]
    return chars + list(BLANK_LOOKING)


def test_every_control_format_and_blank_character_is_escaped() -> None:
    missed = [f"U+{ord(c):04X}" for c in _invisible_code_points() if visible(c) == c]
    assert missed == []


def test_escapes_name_the_character() -> None:
    assert visible("a\x1b[2Kb") == "a\\x1b[2Kb"
    assert visible("\u009b31m") == "\\x9b31m"
    assert visible("x\u202ey") == "x\\u202ey"
    assert visible("tag\U000e0041\U000e0042") == "tag\\U000e0041\\U000e0042"
    assert visible("lone \ud800") == "lone \\ud800"
    assert visible("line\n\tindented") == "line\n\tindented"
    assert visible_line("line\n\tindented\r") == "line\\n\\tindented\\x0d"


def test_readable_text_stays_readable() -> None:
    text = "naïve café — 日本語 ❤️ emoji 👍 tab\tnewline\n"
    assert visible(text) == text


def test_safe_json_is_the_same_json_with_nothing_live() -> None:
    value = {"d": "a\u009bb\u202ec\U000e0041d\x1be\u3164f", "k\u2800": ["ok é", 1]}
    text = safe_json(value, indent=1)
    assert json.loads(text) == value
    assert all(visible(ch) == ch for ch in text)
    assert "\\u009b" in text and "\\udb40\\udc41" in text and "é" in text


def test_plural_says_one_of_a_thing() -> None:
    assert [plural(n, "model") for n in (0, 1, 2, 1204)] == ["0 models", "1 model", "2 models", "1,204 models"]
    assert plural(1, "more entry", "more entries") == "1 more entry"
    assert plural(3, "more entry", "more entries") == "3 more entries"


def test_ascii_text_is_escaped_as_any_other_text() -> None:
    # All-ASCII text takes a smaller character class; the same text with one non-ASCII letter takes the
    # whole one. Both must escape every ASCII character alike.
    ascii_text = "".join(chr(code) for code in range(128)) * 2
    for escape in (visible, visible_line):
        assert escape(ascii_text + "é") == escape(ascii_text) + "é"
    as_json = safe_json({"text": ascii_text})
    assert safe_json({"text": ascii_text + "é"}) == as_json[:-2] + 'é"}'
    assert json.loads(as_json) == {"text": ascii_text} and as_json.isprintable()


def test_a_process_call_is_shown_by_its_argv_or_by_each_stage() -> None:
    assert command_line({"argv": ["ls", "a b"]}) == "ls 'a b'"
    launcher = {"argv": ["python3", "-c", "launch", '[["printf", "x y"], ["grep", "x"]]']}
    assert command_line({**launcher, "pipeline": [["printf", "x y"], ["grep", "x"]]}) == "printf 'x y' | grep x"
    # A log line someone else wrote: stages of another shape are not stages.
    assert command_line({"argv": ["launch"], "pipeline": "printf x"}) == "launch"
