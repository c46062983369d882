"""Making untrusted text safe to print on a terminal."""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and C1 controls: escape sequences could rewrite what the user
# sees (a fake approval prompt, a hidden argument) or talk to the terminal (OSC 52 writes the clipboard).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    r"""``text`` with every control character shown as an escape (``\x1b``), newlines and tabs kept."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
