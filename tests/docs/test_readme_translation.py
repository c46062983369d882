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


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def test_the_same_flags_are_mentioned() -> None:
    """Every --flag either README mentions, in prose, tables or code, the other mentions too: a flag added to
    the English text (--approve, --dry-run) is translated, not left out."""
    english = set(FLAG.findall(ENGLISH.read_text(encoding="utf-8")))
    chinese = set(FLAG.findall(CHINESE.read_text(encoding="utf-8")))
    assert len(english) >= 30
    assert sorted(english - chinese) == [], "in README.md only"
    assert sorted(chinese - english) == [], "in README.zh-CN.md only"


def test_every_command_of_the_english_blocks_is_in_the_chinese_text() -> None:
    """Each command line of the English README's shell blocks appears, as written, in the Chinese one."""
    chinese = CHINESE.read_text(encoding="utf-8")
    english = [line for language, content in blocks(ENGLISH) if language in ("bash", "console", "sh")
               for line in content]  # type: ignore[attr-defined]
    assert len(english) >= 20
    assert [line for line in english if line not in chinese] == []


def run_and_chat_options(path: Path, opening: str) -> list[str]:
    """The options of the paragraph listing what `run` and `chat` take, as written (`--approve read,write`)."""
    text = path.read_text(encoding="utf-8")
    assert opening in text, path.name
    paragraph = text.split(opening, 1)[1].split("\n\n", 1)[0]
    return re.findall(r"`(-[^`]*)`", paragraph)


def test_run_and_chat_take_the_same_options_in_both() -> None:
    english = run_and_chat_options(ENGLISH, "`run` and `chat` take")
    assert {"--yes", "--approve read,write", "--dry-run"} <= set(english)
    assert run_and_chat_options(CHINESE, "`run` 和 `chat` 支持") == english
