"""Untrusted YAML cannot exhaust memory or hang ``nami check``: size, file type and alias expansion caps."""

from __future__ import annotations

import os
from pathlib import Path

from nami_yaml.registry.loader import load_tool_file
from nami_yaml.spec.yamlpos import MAX_FILE_BYTES, parse_yaml

LAUGHS = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdef", "bcdefg", strict=True))


def test_alias_expansion_is_capped() -> None:
    doc, problems = parse_yaml(LAUGHS, "laughs.yaml")
    assert doc is None
    assert len(problems) == 1 and problems[0].message.startswith("more than 100,000 values (aliases expand too far)")


def test_small_aliases_still_work() -> None:
    doc, problems = parse_yaml("base: &b {x: 1}\nother: *b\n", "ok.yaml")
    assert problems == [] and doc is not None and doc.value == {"base": {"x": 1}, "other": {"x": 1}}


def test_a_tool_file_must_be_a_regular_file(tmp_path: Path) -> None:
    link = tmp_path / "zero.yaml"
    os.symlink("/dev/zero", link)
    tools, problems = load_tool_file(link)
    assert tools == []
    assert problems[0].message == "cannot read tool file: not a regular file"


def test_a_tool_file_has_a_size_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_FILE_BYTES + "\nname: t\n")
    tools, problems = load_tool_file(big)
    assert tools == []
    assert problems[0].message == f"cannot read tool file: larger than {MAX_FILE_BYTES:,} bytes"


def test_deep_nesting_is_a_problem_not_a_crash() -> None:
    doc, problems = parse_yaml("a: " + "[" * 5000 + "]" * 5000 + "\n", "deep.yaml")
    assert doc is None and problems and problems[0].file == "deep.yaml"


def test_duplicate_keys_cannot_bypass_the_cap() -> None:
    # Each level maps the same key many times to the previous alias: paths repeat, visits multiply.
    text = "a0: &a0 [x]\n" + "".join(
        f"a{n}: &a{n} {{" + ", ".join(["k: *a" + str(n - 1)] * 10) + "}\n" for n in range(1, 8))
    doc, problems = parse_yaml(text, "dup.yaml")
    assert doc is None
    assert problems[0].message.startswith("more than 100,000 values")
