"""The model's Markdown as HTML for the session export, as the terminal renders it (markdown-it, which
comes with rich): headings, lists, emphasis, code, tables. Safe by construction, whatever the text:

- raw HTML in the Markdown is not passed through (markdown-it's ``html`` option off): ``<script>`` is
  shown as text, escaped like every other piece of text;
- nothing makes a browser fetch or go anywhere: a link is its text followed by its address, as on the
  terminal (where a link goes matters more than its label), and an image is its description and address.
"""

from __future__ import annotations

from functools import cache
from html import escape
from typing import Any


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt  # only an export needs it

    parser = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])

    def link_open(renderer: Any, tokens: list[Any], index: int, options: Any, env: dict[str, Any]) -> str:
        env.setdefault("links", []).append(str(tokens[index].attrGet("href") or ""))
        return '<span class="link">'

    def link_close(renderer: Any, tokens: list[Any], index: int, options: Any, env: dict[str, Any]) -> str:
        address = env["links"].pop() if env.get("links") else ""
        return f'</span> <span class="url">({escape(address)})</span>' if address else "</span>"

    def image(renderer: Any, tokens: list[Any], index: int, options: Any, env: dict[str, Any]) -> str:
        token = tokens[index]
        described = renderer.renderInlineAsText(token.children or [], options, env)
        return (f'<span class="image">[image: {escape(described)}]</span> '
                f'<span class="url">({escape(str(token.attrGet("src") or ""))})</span>')

    parser.add_render_rule("link_open", link_open)
    parser.add_render_rule("link_close", link_close)
    parser.add_render_rule("image", image)
    return parser


def markdown_html(text: str) -> str:
    """``text`` (Markdown) as an HTML fragment that runs and loads nothing."""
    return str(_parser().render(text, {}))
