"""What a grep found: matching lines as "path:line:text", counted and capped the same way by both engines
(search_rg and search_python), so the model cannot tell which one ran."""

from __future__ import annotations

from dataclasses import dataclass, field

GREP_MAX_MATCHES = 200
GREP_COUNT_LIMIT = 10_000  # stop counting here: the model only needs to know "too many"
MATCH_LINE_MAX_CHARS = 300
ENGINE_OUTPUT_CAP = 4_000_000  # what rg, or the Python engine's child process, may print


@dataclass
class Found:
    lines: list[str] = field(default_factory=list)  # "path:line:text", at most GREP_MAX_MATCHES
    total: int = 0
    files: int = 0  # both engines report a file's lines together, so a new name is a new file
    incomplete: bool = False  # counting stopped early
    _last: str | None = field(default=None, repr=False)

    def add(self, shown: str, lineno: int, text: str) -> bool:
        """Record one matching line; False once counting should stop."""
        self.total += 1
        if shown != self._last:
            self.files += 1
            self._last = shown
        if len(self.lines) < GREP_MAX_MATCHES:
            text = text.rstrip("\r\n")
            if len(text) > MATCH_LINE_MAX_CHARS:
                text = text[:MATCH_LINE_MAX_CHARS] + " ..."
            self.lines.append(f"{shown}:{lineno}:{text}")
        if self.total >= GREP_COUNT_LIMIT:
            self.incomplete = True
            return False
        return True
