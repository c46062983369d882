"""Markdown rendered as it streams in: each line is printed once, rendered, as soon as it is complete.

The line being written is shown as plain text while it grows (so the first words appear as soon as they
arrive) and replaced by its rendered form when its newline comes: only that line is redrawn, never
anything above it, so nothing is printed twice into the scrollback. Code blocks are highlighted line by
line (pygments through rich), headings, lists, quotes, rules and inline styles are rendered per line. A
table needs all its rows to size its columns: its rows stay plain on screen until it ends, then are
replaced by the table. A partial line or table taller than the screen cannot be erased any more, so it
is left as plain text.

rich (and markdown-it-py, which comes with it) is imported here only, and this module only when answers
go to a terminal that takes colours.
"""

from __future__ import annotations

import re
from typing import TextIO

from markdown_it import MarkdownIt
from rich.box import SIMPLE_HEAD
from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from nami_yaml.display import visible

_FENCE = re.compile(r"^(\s{0,3})(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(\s+#+\s*)?$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_TASK = re.compile(r"^\[([ xX])\]\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
CODE_CONTEXT = 60  # lines before a code line lexed with it, so strings and comments spanning lines colour right

HEADING_STYLES = {1: "bold magenta underline", 2: "bold magenta", 3: "bold"}
INLINE_STYLES = {"strong": "bold", "em": "italic", "s": "strike", "link": "underline blue"}


class MarkdownStream:
    """Feed it text as it arrives; :meth:`close` at the end of the message."""

    def __init__(self, out: TextIO, *, color: bool = True, width: int | None = None):
        self.out = out
        self.console = Console(file=out, force_terminal=True, no_color=not color, width=width, highlight=False,
                               markup=False, emoji=False, soft_wrap=False)
        self._inline = MarkdownIt("commonmark").enable("strikethrough")
        self._pending = ""  # text of the line not yet complete
        self._shown = ""  # what of it is on screen, as written (tabs expanded)
        self._held: list[str] = []  # complete lines on screen as plain text, waiting to be rendered (a table)
        self._held_rows = 0  # the screen rows they take, for erasing
        self._raw_line = False  # the current line outgrew the screen: it stays plain
        self._raw_table = False  # so did the current table
        self._fence: tuple[str, str] | None = None  # (marker, language) inside a code block
        self._code: list[str] = []

    # -- the stream -----------------------------------------------------------------------------------

    @property
    def at_line_start(self) -> bool:
        """Nothing plain is waiting to be replaced (a status line may be drawn below)."""
        return not self._pending and not self._held

    def feed(self, text: str) -> None:
        self._pending += visible(text)
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._complete(line)
        self._show_pending()
        self.out.flush()

    def close(self) -> None:
        """The message ended: its last line (if it had no newline) and an open table are rendered."""
        if self._pending:
            line, self._pending = self._pending, ""
            self._complete(line)
        self._flush_table()
        self._fence, self._code = None, []
        self.out.flush()

    # -- lines ----------------------------------------------------------------------------------------

    def _complete(self, line: str) -> None:
        if self._raw_line:  # already on screen as it is
            self.out.write(line.expandtabs()[len(self._shown):] + "\n")
            self._shown, self._raw_line = "", False
            if not (self._raw_table and _TABLE_ROW.match(line)):
                self._raw_table = False
            return
        self._erase_pending()
        if self._fence is None and _TABLE_ROW.match(line):
            self._hold(line)
            return
        self._flush_table()
        self._render(line)

    def _render(self, line: str) -> None:
        if self._fence is not None:
            marker = _FENCE.match(line)
            if marker and marker.group(2)[0] == self._fence[0][0] and len(marker.group(2)) >= len(self._fence[0]) \
                    and not marker.group(3):
                self._print(Text(line, style="dim"))
                self._fence, self._code = None, []
                return
            self._code.append(line)
            self._print(self._highlight(), soft_wrap=True)
            return
        fence = _FENCE.match(line)
        if fence:
            self._fence = (fence.group(2), fence.group(3))
            self._print(Text(line, style="dim"))
            return
        if not line.strip():
            self.out.write("\n")
            return
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            self._print(self._styled(heading.group(2), Style.parse(HEADING_STYLES.get(level, "bold"))))
            return
        if _RULE.match(line):
            self._print(Text("─" * min(self.console.width, 80), style="dim"))
            return
        quote = _QUOTE.match(line)
        if quote:
            bar = Text()
            bar.append("▌ ", style="dim")
            self._wrapped(bar, "▌ ", self._styled(quote.group(1), Style(italic=True)), "dim")
            return
        item = _ITEM.match(line)
        if item:
            indent, marker, body = item.groups()
            task = _TASK.match(body)
            if task:
                marker, body = ("☑" if task.group(1) in "xX" else "☐"), body[task.end():]
            elif marker in "-*+":
                marker = "•"
            first = Text(indent)
            first.append(marker, style="bold" if marker[0].isdigit() else "cyan")
            first.append(" ")
            self._wrapped(first, " " * cell_len(first.plain), self._styled(body))
            return
        indent = line[: len(line) - len(line.lstrip())].expandtabs()
        self._wrapped(Text(indent), indent, self._styled(line.strip()))

    def _highlight(self) -> Text:
        context = self._code[-CODE_CONTEXT:]
        syntax = Syntax("", self._fence[1] if self._fence else "", theme="ansi_dark")  # the terminal's own colours
        try:
            lines = syntax.highlight("\n".join(context)).split("\n")
        except Exception:  # an odd lexer must not cost the answer
            return Text(self._code[-1])
        text = lines[len(context) - 1] if len(lines) >= len(context) else Text(self._code[-1])
        text.rstrip()
        return text

    def _styled(self, source: str, base: Style | None = None) -> Text:
        """Inline Markdown (bold, italic, code, links, strike) as styled text; a link's address follows
        its text, dimmed (where it really goes matters more than a clickable label). What markdown-it
        gives back is escaped again: it turns character references (``&#x202E;``) into the characters."""
        text = _EscapedText(style=base or "")
        try:
            tokens = self._inline.parseInline(source)[0].children or []
        except Exception:
            text.append(source)
            return text
        stack: list[tuple[str, str]] = []  # (style, link address)
        for token in tokens:
            kind = token.type
            if kind.endswith("_open"):
                name = kind[: -len("_open")]
                stack.append((INLINE_STYLES.get(name, ""), str(token.attrs.get("href", "")) if name == "link" else ""))
                continue
            if kind.endswith("_close"):
                if stack:
                    _, href = stack.pop()
                    if href and not text.plain.endswith(href):
                        text.append(f" ({href})", style="dim")
                continue
            style = " ".join(s for s, _ in stack if s)
            if kind == "code_inline":
                text.append(token.content, style=f"{style} cyan".strip())
            elif kind in ("softbreak", "hardbreak"):
                text.append(" ")
            elif kind == "image":
                text.append(f"[image: {token.content}]", style="dim")
            else:
                text.append(token.content, style=style or None)
        return text

    # -- tables ---------------------------------------------------------------------------------------

    def _hold(self, line: str) -> None:
        shown = line.expandtabs()
        rows = self._rows(cell_len(shown))
        self.out.write(shown + "\n")
        if self._raw_table:
            return
        if self._held_rows + rows >= self._screen_rows():
            # Taller than the screen: what scrolled off cannot be erased, so this table stays plain.
            self._raw_table, self._held, self._held_rows = True, [], 0
            return
        self._held.append(line)
        self._held_rows += rows

    def _flush_table(self) -> None:
        self._raw_table = False
        if not self._held:
            return
        rows, self._held = self._held, []
        self._erase_rows(self._held_rows)
        self._held_rows = 0
        table = self._table(rows)
        if table is None:
            for row in rows:
                self._render(row)
            return
        self.console.print(table)

    def _table(self, rows: list[str]) -> Table | None:
        if len(rows) < 2 or not _DELIMITER.match(rows[1]):
            return None
        header, aligns = _cells(rows[0]), _cells(rows[1])
        justify = ["center" if a.startswith(":") and a.endswith(":") else "right" if a.endswith(":") else "left"
                   for a in aligns]
        table = Table(box=SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for n, title in enumerate(header):
            table.add_column(self._styled(title), justify=justify[n] if n < len(justify) else "left")  # type: ignore[arg-type]
        for row in rows[2:]:
            cells = _cells(row)
            table.add_row(*[self._styled(c) for c in (cells + [""] * len(header))[: len(header)]])
        return table

    # -- the screen -----------------------------------------------------------------------------------

    def _show_pending(self) -> None:
        shown = self._pending.expandtabs()
        if not shown.startswith(self._shown):  # text only grows; redraw to be safe if it did not
            self._erase_pending()
        if not self._raw_line and self._held_rows + self._rows(cell_len(shown)) >= self._screen_rows():
            # From here the line is too tall to erase: it stays plain, and so does a table above it.
            self._raw_line = True
            self._raw_table, self._held, self._held_rows = bool(self._held), [], 0
        self.out.write(shown[len(self._shown):])
        self._shown = shown

    def _erase_pending(self) -> None:
        """Back to the start of the partial line, and clear from there to the end of the screen."""
        if self._shown:
            cells = cell_len(self._shown)
            up = (cells - 1) // max(1, self.console.width)  # the cursor waits in the last cell of a full row
            self.out.write("\r" + (f"\x1b[{up}A" if up else "") + "\x1b[J")
            self._shown = ""

    def _erase_rows(self, rows: int) -> None:
        """Up over ``rows`` whole rows written above the cursor's row, and clear to the end of the screen."""
        self.out.write("\r" + (f"\x1b[{rows}A" if rows else "") + "\x1b[J")

    def _rows(self, cells: int) -> int:
        width = max(1, self.console.width)
        return max(1, -(-cells // width))

    def _screen_rows(self) -> int:
        return max(3, self.console.height - 1)

    def _print(self, text: Text, *, soft_wrap: bool = False) -> None:
        self.console.print(text, soft_wrap=soft_wrap)

    def _wrapped(self, first: Text, rest: str, body: Text, prefix_style: str = "") -> None:
        """``body`` wrapped to the screen, ``first`` before its first line and ``rest`` before the others."""
        width = max(10, self.console.width - cell_len(first.plain))
        lines = body.wrap(self.console, width) or [Text()]
        for n, line in enumerate(lines):
            if n == 0:
                lead = first.copy()
            else:
                lead = Text()
                lead.append(rest, style=prefix_style)
            lead.append_text(line)
            self.console.print(lead, soft_wrap=True)


class _EscapedText(Text):
    """rich Text whose appended strings are shown with :func:`visible`."""

    def append(self, text: str | Text, style: str | Style | None = None) -> _EscapedText:  # type: ignore[override]
        super().append(visible(text) if isinstance(text, str) else text, style)
        return self


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]
