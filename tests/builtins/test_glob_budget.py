"""Glob patterns cannot hold nami: the model's patterns (glob, grep) and a repository's .gitignore are
matched in time proportional to the path, with the same answers as before.

The hostile cases run in a child process with a deadline, so a regression fails instead of stalling the
suite (a backtracking match does not even see Ctrl-C).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nami_yaml.builtins.glob_match import MAX_ALTERNATIVES, _Positions, glob_matcher, glob_regex, tokens
from nami_yaml.errors import ToolError

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from nami_yaml.builtins.search import glob
    from nami_yaml.runtime import RuntimeContext
    ws = Path(sys.argv[1])
    ctx = RuntimeContext(workspace=ws, spill_dir=ws.parent / "spill")
    print(json.dumps(glob(sys.argv[2], ctx=ctx).content))
""")

EVIL = "*a" * 10 + "*b"


def _glob_in_child(workspace: Path, pattern: str) -> str:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(workspace), pattern], capture_output=True,
                              text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"glob({pattern!r}) did not answer within 30 s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / ("a" * 100)).write_text("")
    (folder / "x.txt").write_text("hi\n")
    return folder


def test_the_models_pattern_cannot_hold_nami(workspace: Path) -> None:
    """`*a` ten times then `*b` against a file name of 100 `a`s ran for hours."""
    assert _glob_in_child(workspace, EVIL).startswith("No files match")
    (workspace / ("a" * 99 + "b")).write_text("")
    assert _glob_in_child(workspace, EVIL) == "a" * 99 + "b"


def test_a_repositorys_gitignore_cannot_hold_nami(workspace: Path) -> None:
    """The same line in a cloned repository's .gitignore held every glob('**/*') the model made."""
    (workspace / ".gitignore").write_text(EVIL + "\n" + "*.tx?\n")
    assert _glob_in_child(workspace, "**/*") == "a" * 100  # x.txt is ignored, the long name is not


def test_too_many_alternatives_are_refused() -> None:
    with pytest.raises(ToolError, match=f"more than {MAX_ALTERNATIVES} alternatives"):
        glob_matcher("{a,b}" * 9 + "c")
    assert glob_matcher("{a,b}" * 8 + "c")("ab" * 4 + "c")


PIECES = ["a", "b", "/", ".", "*", "**", "**/", "?", "[ab]", "[!a]", "{a,b/}", "\\*", "{*,}"]
TEXT = ["a", "b", "/", ".", "*", "ab"]


def test_the_answers_are_the_regexs() -> None:
    """Seeded random patterns and paths: the position-by-position match and the expanded alternatives
    agree with the one regex the patterns used to be (on inputs small enough for it)."""
    rng = random.Random(20250602)
    checked = 0
    for _ in range(3000):
        pattern = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 7)))
        regex = re.compile(glob_regex(pattern) + r"\Z", re.DOTALL)
        matcher = glob_matcher(pattern)
        flat = tokens(pattern)
        positions = _Positions(flat).fullmatch if all(t[0] != "alt" for t in flat) else None
        for _ in range(8):
            text = "".join(rng.choice(TEXT) for _ in range(rng.randint(0, 8)))
            expected = regex.match(text) is not None
            assert matcher(text) == expected, (pattern, text)
            if positions is not None:
                assert positions(text) == expected, (pattern, text)
            checked += 1
    assert checked == 24000


def test_a_class_that_is_not_valid_is_an_error_and_a_gitignore_line_is_skipped(workspace: Path) -> None:
    """A cloned repository's .gitignore line `[z-a]` made every glob and grep fail with "bad character
    range"; the model's own pattern gets a clear error."""
    with pytest.raises(ToolError, match=r"glob pattern '\[z-a\]' is not valid: bad character range"):
        glob_matcher("[z-a]")
    (workspace / ".gitignore").write_text("[z-a]\n*.txt\n")
    assert _glob_in_child(workspace, "**/*") == "a" * 100
