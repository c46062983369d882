"""Making untrusted text safe to print on a terminal."""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and C1 controls: escape sequences could rewrite what the user
# sees (a fake approval prompt, a hidden argument) or talk to the terminal (OSC 52 writes the clipboard).
# Also format characters (bidirectional overrides, zero-width spaces) and Unicode line/paragraph separators,
# which reorder or hide text without any escape sequence.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]")


def visible(text: str) -> str:
    r"""``text`` with every control or invisible format character shown as an escape, newlines and tabs kept."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
