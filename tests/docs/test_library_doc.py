"""docs/library.md lists every tool of the library, with its group and risk as the files say."""

from __future__ import annotations

import re
from pathlib import Path

from nami_yaml.registry.library import library_catalog

DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"
ROW = re.compile(r"^\| (\w+) \| `(\w+)` \| (\w+) \|", re.M)


def test_the_table_matches_the_library() -> None:
    catalog, problems = library_catalog()
    assert problems == []
    actual = {(group.name, tool.name, tool.risk) for group in catalog for tool in group.tools}
    assert set(ROW.findall(DOC.read_text(encoding="utf-8"))) == actual
