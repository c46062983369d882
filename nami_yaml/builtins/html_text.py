"""HTML -> readable plain text for the model, with the stdlib html.parser only.

Keeps the structure a reader needs (title, headings as ``#``, list items as ``-``, links as
``text (url)``, table cells separated by ``|``, preformatted blocks verbatim) and drops what a
reader never sees (scripts, styles, the head, inline SVG).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from nami_yaml.env_secrets import child_environment
from nami_yaml.runners.pychild import ChildFailed, call_in_child
from nami_yaml.runners.sandbox.plan import SandboxPlan

_SKIP = {"script", "style", "noscript", "svg", "head", "template", "iframe", "object", "canvas"}
# Anything else opening while we sit in <head> means the author never closed it.
_HEAD_CONTENT = {"title", "meta", "link", "style", "script", "noscript", "base", "template"}
_PARAGRAPH = {"p", "blockquote", "pre", "table", "ul", "ol", "dl", "section", "article", "main",
              "header", "footer", "nav", "aside", "figure", "form", "fieldset", "details", "hr",
              "address"}
_LINE = {"div", "br", "tr", "li", "dt", "dd", "summary", "figcaption", "caption", "option", "label"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACE = re.compile(r"\s+")


class _TextParser(HTMLParser):
    def __init__(self, base_url: str | None):
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.title: list[str] = []
        self.lines: list[str] = []
        self._cur: list[str] = []
        self._prefix = ""
        self._skip: list[str] = []
        self._in_title = False
        self._pre = 0
        self._pre_start = False  # browsers drop one newline right after <pre>
        self._lists: list[list[int]] = []  # per open list: [is_ordered, next number]
        self._links: list[tuple[str | None, int]] = []
        self._row_cells = 0

    # -- line assembly ------------------------------------------------------------------------
    def _flush(self, keep_blank: bool = False) -> None:
        text = "".join(self._cur)
        text = text.rstrip() if self._pre else text.strip()
        if text or keep_blank:
            self.lines.append(self._prefix + text)
            self._prefix = ""
        self._cur = []

    def _end_block(self, nested: bool) -> None:
        if nested:
            self._flush()
        else:
            self._blank()

    def _blank(self) -> None:
        self._flush()
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    # -- parser callbacks ---------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip == ["head"] and tag not in _HEAD_CONTENT:
            self._skip.pop()
        if tag == "title" and self._skip in ([], ["head"]):
            self._in_title = True
            return
        if self._skip or tag in _SKIP:
            if tag in _SKIP:
                self._skip.append(tag)
            return
        attr = dict(attrs)
        if tag in _HEADINGS:
            self._blank()
            self._prefix = "#" * _HEADINGS[tag] + " "
        elif tag in ("ul", "ol"):
            self._end_block(nested=bool(self._lists))
            self._lists.append([tag == "ol", 1])
        elif tag == "li":
            self._flush()
            indent = "  " * max(len(self._lists) - 1, 0)
            if self._lists and self._lists[-1][0]:
                self._prefix = f"{indent}{self._lists[-1][1]}. "
                self._lists[-1][1] += 1
            else:
                self._prefix = f"{indent}- "
        elif tag in _PARAGRAPH:
            self._blank()
            if tag == "pre":
                self._pre += 1
                self._pre_start = True
            elif tag == "hr":
                self.lines.append("---")
        elif tag in _LINE:
            self._flush()
            if tag == "tr":
                self._row_cells = 0
        elif tag in ("td", "th"):
            if self._row_cells:
                self._cur.append(" | ")
            self._row_cells += 1
        elif tag == "a":
            self._links.append((attr.get("href"), len(self._cur)))
        elif tag == "img" and attr.get("alt"):
            self._cur.append(f" [image: {attr['alt']}] ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if self._skip:
            if tag in self._skip:
                while self._skip.pop() != tag:
                    pass
            return
        if tag in _HEADINGS:
            self._blank()
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._end_block(nested=bool(self._lists))
        elif tag in _PARAGRAPH:
            if tag == "pre" and self._pre:
                self._flush()
                self._pre -= 1
            self._blank()
        elif tag in _LINE:
            self._flush()
        elif tag == "a" and self._links:
            href, start = self._links.pop()
            self._close_link(href, start)

    def _close_link(self, href: str | None, start: int) -> None:
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            return
        url = urljoin(self.base_url, href.strip()) if self.base_url else href.strip()
        text = "".join(self._cur[start:]).strip()
        if text and text != url:
            self._cur.append(f" ({url})")
        elif not text:
            self._cur.append(url)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
            return
        if self._skip:
            return
        if self._pre:
            if self._pre_start and data.startswith("\n"):
                data = data[1:]
            self._pre_start = False
            first, *rest = data.split("\n")
            self._cur.append(first)
            for line in rest:
                self._flush(keep_blank=True)
                self._cur.append(line)
            return
        text = _SPACE.sub(" ", data)
        if not self._cur or self._cur[-1].endswith(" "):
            text = text.lstrip()
        if text:
            self._cur.append(text)


def html_to_text_bounded(html: str, base_url: str | None, *, timeout: float, cancel: threading.Event,
                         env: dict[str, str] | None = None, cwd: Path | None = None,
                         sandbox: SandboxPlan | None = None) -> str:
    """``html_to_text`` in a child process (in ``sandbox``) killed after ``timeout`` seconds or on ``cancel``.

    html.parser rescans to the end of the document at every ``<`` that starts no complete tag, so a page
    of ``<a x`` repeated is quadratic (80 KB took 20 s) and holds the GIL. Raises TimeoutError,
    InterruptedError, or ValueError with the parser's complaint for a page it cannot read.
    """
    try:
        reply = call_in_child(
            "nami_yaml.builtins.html_text:html_child", {"html": html, "base_url": base_url}, timeout=timeout,
            cancel=cancel, env=env if env is not None else child_environment(os.environ),
            cwd=cwd or Path(tempfile.gettempdir()),
            # JSON escapes non-ASCII text (up to 12 bytes for a character past U+FFFF); links may add their URLs.
            max_output=12 * len(html) + 65_536, sandbox=sandbox)
    except ChildFailed as exc:
        raise ValueError(str(exc)) from None
    if "error" in reply:
        raise ValueError(reply["error"])
    return str(reply["text"])


def html_child(request: dict[str, Any]) -> dict[str, str]:
    """The child's side of html_to_text_bounded."""
    try:
        return {"text": html_to_text(request["html"], base_url=request["base_url"])}
    except Exception as exc:  # html.parser asserts on some malformed markup (`<![‹![`)
        return {"error": f"{type(exc).__name__}: {exc}"}


def html_to_text(html: str, base_url: str | None = None) -> str:
    """Readable text of an HTML document; relative links are resolved against ``base_url``."""
    parser = _TextParser(base_url)
    parser.feed(html)
    parser.close()
    parser._blank()
    lines = [line.rstrip() for line in parser.lines]
    while lines and lines[-1] == "":
        lines.pop()
    title = _SPACE.sub(" ", "".join(parser.title)).strip()
    if title:
        lines = [f"Title: {title}", "", *lines]
    return "\n".join(lines)
