"""README.zh-CN.md mirrors README.md: the two link to each other, and every command, code block and
command-table entry is the same (only prose and comments are translated)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = ROOT / "README.md"
CHINESE = ROOT / "README.zh-CN.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TRAILING_COMMENT = re.compile(r"\s+#\s.*$")
TABLE_COMMAND = re.compile(r"^\| (`nami[^`]*`(?: / `[^`]*`)*) \|", re.M)


def commands(block: str, language: str) -> list[str]:
    """The command lines of a shell block, without trailing comments (which may be translated)."""
    lines = block.splitlines()
    if language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    else:
        lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return [TRAILING_COMMENT.sub("", line) for line in lines]


def blocks(path: Path) -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for language, body in FENCE.findall(path.read_text(encoding="utf-8")):
        if language in ("bash", "console", "sh"):
            found.append((language, commands(body, language)))
        elif language == "yaml":
            found.append((language, yaml.safe_load(body)))  # comments may be translated, data may not
        else:
            found.append((language, body))
    return found


def test_each_links_to_the_other() -> None:
    assert "(README.zh-CN.md)" in ENGLISH.read_text(encoding="utf-8").split("\n## ")[0]
    assert "(README.md)" in CHINESE.read_text(encoding="utf-8").split("\n## ")[0]


def test_the_code_blocks_and_their_commands_match() -> None:
    english, chinese = blocks(ENGLISH), blocks(CHINESE)
    assert [language for language, _ in chinese] == [language for language, _ in english]
    for (language, ours), (_, theirs) in zip(english, chinese, strict=True):
        assert theirs == ours, language
    assert sum(len(content) for language, content in english if language in ("bash", "console")) >= 15


def test_the_command_tables_match() -> None:
    english = TABLE_COMMAND.findall(ENGLISH.read_text(encoding="utf-8"))
    assert len(english) >= 10
    assert TABLE_COMMAND.findall(CHINESE.read_text(encoding="utf-8")) == english


def test_the_same_documents_are_linked() -> None:
    link = re.compile(r"\]\((docs/[^)]+)\)")
    assert sorted(set(link.findall(CHINESE.read_text(encoding="utf-8")))) == \
        sorted(set(link.findall(ENGLISH.read_text(encoding="utf-8"))))
