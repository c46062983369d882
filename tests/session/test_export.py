"""The HTML export renders the model's Markdown as the terminal does, and lets no HTML of its own through."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from nami_yaml.session.export import render_html
from nami_yaml.session.loader import LoadedSession

ANSWER = """\
# Findings

The **web** pods restart: see [the runbook](https://wiki.example.com/web) and `kubectl logs`.

- one <b>raw</b> tag <script>alert(1)</script>
- an ![diagram](https://evil.example/track.png) image

| pod | restarts |
|-----|----------|
| web-1 | 14 |

```bash
kubectl rollout restart deployment/web
```

<iframe src="https://evil.example"></iframe>
[click](javascript:alert(1))
"""


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(attrs)


def page(content: str, role: str = "assistant") -> tuple[str, Tags]:
    session = LoadedSession(Path("s.jsonl"), {"id": "s"}, [], [
        {"type": "message", "message": {"role": role, "content": content}}])
    html = render_html(session)
    tags = Tags()
    tags.feed(html.split("<main>", 1)[1])
    return html, tags


def test_the_answer_is_rendered_markdown() -> None:
    html, tags = page(ANSWER)
    assert "<h1>Findings</h1>" in html and "<strong>web</strong>" in html and "<code>kubectl logs</code>" in html
    assert {"h1", "ul", "li", "table", "th", "td", "pre", "code"} <= set(tags.tags)
    assert '<span class="link">the runbook</span> <span class="url">(https://wiki.example.com/web)</span>' in html
    assert "kubectl rollout restart deployment/web" in html


def test_no_html_from_the_model_gets_through_and_nothing_loads_or_links() -> None:
    html, tags = page(ANSWER)
    assert not {"script", "iframe", "img", "b", "a"} & set(tags.tags)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;raw&lt;/b&gt;" in html
    assert "&lt;iframe" in html
    assert [name for name, _ in tags.attributes if name in ("href", "src", "srcset", "style", "onerror")] == []
    assert '[image: diagram]</span> <span class="url">(https://evil.example/track.png)</span>' in html
    assert "javascript:" not in html.replace("[click](javascript:alert(1))", "")


def test_what_a_person_typed_stays_as_typed() -> None:
    html, tags = page("# not a heading, just what I typed", role="user")
    assert "<pre># not a heading, just what I typed</pre>" in html and "h1" not in tags.tags
