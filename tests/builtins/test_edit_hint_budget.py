"""edit_file's "most similar text" hint stays within a work budget, however large the file and old_text.

Each case runs in a child process with a deadline, so a regression fails instead of stalling the suite.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nami_yaml.builtins import edit_hint, files
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

CHILD = textwrap.dedent("""
    import difflib, json, sys, types
    from pathlib import Path
    from nami_yaml.builtins import edit_hint, files
    from nami_yaml.errors import ToolError
    from nami_yaml.runtime import RuntimeContext

    work = 0

    class Counting(difflib.SequenceMatcher):
        # The work of each comparison, as the budget counts it: the pairs of elements it may face.
        def ratio(self):
            global work
            work += len(self.a) * len(self.b)
            return super().ratio()

    edit_hint.difflib = types.SimpleNamespace(SequenceMatcher=Counting)
    ws, old = Path(sys.argv[1]), Path(sys.argv[2]).read_text()
    ctx = RuntimeContext(workspace=ws, spill_dir=ws / ".spill")
    try:
        files.edit_file("big.txt", old, "replacement", ctx=ctx)
        message = "edited"
    except ToolError as exc:
        message = str(exc)
    print(json.dumps({"work": work, "message": message}))
""")

WORDS = ["alpha", "beta", "gamma", "delta", "value", "result", "compute", "index", "item", "total"]


def _lines(rng: random.Random, count: int) -> list[str]:
    return ["    " + " ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(count)]


def _edit_in_child(tmp_path: Path, file_lines: list[str], old_lines: list[str]) -> dict[str, object]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text("\n".join(file_lines) + "\n")
    old = tmp_path / "old.txt"
    old.write_text("\n".join(old_lines))
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(workspace), str(old)], capture_output=True,
                              text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("edit_file did not answer within 30 s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("file_count, old_count", [(2000, 60), (4000, 60), (5000, 400), (300, 60), (20000, 5)])
def test_a_near_miss_against_a_large_file_answers_quickly(tmp_path: Path, file_count: int, old_count: int) -> None:
    """The review's case: a 60-line old_text that does not match a 2,000-line file took 90 s."""
    rng = random.Random(7)
    reply = _edit_in_child(tmp_path, _lines(rng, file_count), _lines(rng, old_count))
    assert str(reply["message"]).startswith("old_text was not found in big.txt.")
    assert int(reply["work"]) <= edit_hint.WORK_BUDGET  # counted, not timed


def test_the_whitespace_scan_of_a_huge_repetitive_file_is_bounded(tmp_path: Path) -> None:
    file_lines = ["x = 1"] * 200_000
    old_lines = ["x = 1"] * 5000 + ["y = 2"]
    reply = _edit_in_child(tmp_path, file_lines, old_lines)  # the child's deadline catches a scan that runs away
    assert str(reply["message"]).startswith("old_text was not found in big.txt.")
    assert int(reply["work"]) <= edit_hint.WORK_BUDGET


def test_the_hint_still_finds_the_nearest_lines(ctx: RuntimeContext) -> None:
    rng = random.Random(3)
    lines = _lines(rng, 3000)
    (ctx.workspace / "big.txt").write_text("\n".join(lines) + "\n")
    wanted = lines[1200:1260]
    near = list(wanted)
    near[10] = near[10].replace("alpha", "alpah") + " extra"
    near[40] = "    something else entirely"
    with pytest.raises(ToolError) as info:
        files.edit_file("big.txt", "\n".join(near), "new", ctx=ctx)
    assert "most similar text" in str(info.value) and "at lines 1201-1260" in str(info.value)


def test_a_one_line_typo_is_still_found(ctx: RuntimeContext) -> None:
    (ctx.workspace / "a.py").write_text("def main():\n    return compute_total(items, tax_rate)\n\nmain()\n")
    with pytest.raises(ToolError) as info:
        files.edit_file("a.py", "    return compute_totl(items, tax_rate)", "x", ctx=ctx)
    assert "at line 2:" in str(info.value)
