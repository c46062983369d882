"""Making untrusted text safe to print on a terminal, as text or as JSON."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# C0 controls except tab and newline, DEL, and C1 controls: escape sequences could rewrite what the user
# sees (a fake approval prompt, a hidden argument) or talk to the terminal (OSC 52 writes the clipboard).
# Also every format character (Unicode category Cf: bidirectional overrides, zero-width spaces, the tag
# characters U+E0000-E007F that can carry a hidden message), line/paragraph separators, characters that
# render as nothing (Hangul fillers U+115F/U+1160/U+3164/U+FFA0, the blank Braille pattern U+2800, the
# combining grapheme joiner, Khmer and Mongolian invisible marks), variation selectors other than the
# emoji one U+FE0F (they can smuggle data after any character), and lone surrogates (which cannot even
# be written to a UTF-8 terminal).
_INVISIBLE = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u2800\u3164"
    "\ud800-\udfff\ufe00-\ufe0e\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
_CONTROL = re.compile(f"[{_INVISIBLE}]")
_CONTROL_OR_BREAK = re.compile(f"[{_INVISIBLE}\n\t]")
# The same classes cut down to their ASCII members, for text that is all ASCII (most of it): a class this
# small is searched ten times faster, and the audit line, the session file and every progress line of a
# call go through one of these (bench/: per step).
_ASCII = "".join(re.escape(chr(code)) for code in range(128) if _CONTROL.match(chr(code)))
_ASCII_CONTROL = re.compile(f"[{_ASCII}]")
_ASCII_CONTROL_OR_BREAK = re.compile(f"[{_ASCII}\n\t]")


def visible(text: str) -> str:
    r"""``text`` with every control or invisible character shown as an escape, newlines and tabs kept."""
    return (_ASCII_CONTROL if text.isascii() else _CONTROL).sub(_escape, text)


def visible_line(text: str) -> str:
    r"""Like ``visible``, and newlines and tabs escaped too: for a field that must stay on one line."""
    return (_ASCII_CONTROL_OR_BREAK if text.isascii() else _CONTROL_OR_BREAK).sub(_escape, text)


def pipeline_line(stages: Iterable[Sequence[Any]]) -> str:
    """A ``pipeline:`` tool's rendered stages as one command line, each stage's argv quoted as a shell reads
    it: ``printf 'a b' | grep a | sort``. Not escaped here: printed, it goes through ``visible_line`` as every
    command line does."""
    return " | ".join(shlex.join(str(word) for word in stage) for stage in stages)


def command_line(plan: Mapping[str, Any]) -> str:
    """What a process call's plan (or its audit record's) runs, as one command line: its argv, or for a
    pipeline, whose argv is nami's launcher, each stage's (:func:`pipeline_line`). The one text of a
    process call wherever it is shown: the approval question, a dry run, ``nami tools call --dry-run``,
    ``nami log``."""
    stages = plan.get("pipeline")
    if isinstance(stages, list) and stages and all(isinstance(stage, list) for stage in stages):
        return pipeline_line(stages)
    return shlex.join(str(word) for word in plan.get("argv") or ())


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character past U+FFFF as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


# Compact JSON with text as it is (non-ASCII unescaped), anything else JSON cannot hold as its str(): the
# lines of the audit log and of session files. Made once: json.dumps() with options makes an encoder per call.
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def safe_json(value: Any, **options: Any) -> str:
    """``json.dumps`` that keeps readable text readable (``ensure_ascii=False``) but writes every control
    or invisible character as a ``\\u`` escape: the same JSON to a parser, nothing live on a terminal."""
    return visible_json(json.dumps(value, ensure_ascii=False, **options))


def visible_json(text: str) -> str:
    """JSON text (a line of a log someone else may have written) with every control or invisible
    character written as a ``\\u`` escape: outside strings valid JSON is plain ASCII, so whatever
    matches sits inside a string, and a parser reads the same values."""
    return (_ASCII_CONTROL if text.isascii() else _CONTROL).sub(_json_escape, text)


def summarize_arguments(args: dict[str, Any], limit: int = 60) -> str:
    """``key=value`` pairs for progress lines and approval prompts; long values show their size only."""
    parts = []
    for key, value in args.items():
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > limit:
            size = len(value) if isinstance(value, str) else len(text)
            text = f"<{plural(size, 'char')}>"
        parts.append(f"{key}={text}")
    return " ".join(parts)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 model``, ``2 models``, ``1,204 lines`` (``many``: the plural where it is not noun + s)."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"
