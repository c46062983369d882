"""`python -m bench --quick` (the CI subset) runs every section and yields every row with a sane value, so the
benchmark cannot rot. Figures are never asserted on time: only on what is not a timing (openai not
imported, the prefix kept, the token counts adding up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.__main__ import SECTIONS, collect  # noqa: E402
from bench.common import BenchError, Row, Settings  # noqa: E402
from bench.table import BEGIN, END, markdown  # noqa: E402
from bench.tokens import BUDGET  # noqa: E402
from nami_yaml.registry.library import library_groups  # noqa: E402

KEYS = [
    "startup.python", "startup.openai",
    *(f"startup.{c}{suffix}" for c in ("help", "tools_list", "check") for suffix in ("", ".vs_python", ".no_openai")),
    "load.generated", "load.kept", "load.library", "load.check_many", "load.start_many",
    *(f"against.{measure}{suffix}" for measure in ("help", "check", "open") for suffix in ("", ".cpu")),
    "steps.stream", "steps.plain", "steps.stream.seeds", "steps.plain.seeds", "steps.process", "steps.inprocess",
    "stream.first_byte.pty", "stream.first_byte.pipe",
    "parallel.four_reads",
    "memory.flood", "memory.resume",
    *(f"tokens.{part}.{unit}" for part in ("prompt", "tools", "total", "library") for unit in ("chars", "tokens")),
    "tokens.files.chars",
    "prefix.stable",
    "batch.workers1", "batch.workers2", "batch.workers4", "batch.per_core",
    "bash_rules.slowest",
    "shaping.docker_containers", "shaping.kubectl_pods", "shaping.terraform_show",
    "sandbox.extra",
]


@pytest.fixture(scope="module")
def rows() -> dict[str, Row]:
    found = collect(Settings(quick=True, repeat=1), SECTIONS, progress=False)
    return {row.key: row for row in found}


def test_every_row_is_there(rows: dict[str, Row]) -> None:
    assert sorted(rows) == sorted(KEYS)
    table = markdown(rows.values())
    assert len(table.splitlines()) == len(KEYS) + 2
    assert all(line.startswith("|") and line.endswith("|") for line in table.splitlines())


def test_the_values_are_sane(rows: dict[str, Row]) -> None:
    assert all(row.problem() is None for row in rows.values())  # collect() refuses them anyway
    for key in ("startup.python", "startup.openai", "startup.help", "startup.tools_list", "startup.check",
                "load.generated", "load.library", "load.check_many", "load.start_many", "parallel.four_reads", "batch.workers1", "batch.workers4",
                "bash_rules.slowest", "stream.first_byte.pty", "stream.first_byte.pipe"):
        assert rows[key].value > 0, key
    for key in ("memory.flood", "memory.resume"):
        assert 5 < rows[key].value < 10_000, key  # MB: a Python process, not nothing, not everything
    for key in ("steps.stream", "steps.plain"):  # the goal rows: against the direct-post loop, with a target
        assert rows[key].baseline_label == "direct-post loop" and rows[key].target == "≤ 1.10×", key
        assert rows[f"{key}.seeds"].baseline is not None and "create()" in rows[f"{key}.seeds"].baseline_label
    assert rows["steps.process"].unit == "s" and rows["steps.process"].baseline is not None


def test_this_checkout_against_its_parent(rows: dict[str, Row]) -> None:
    """The against rows: both trees measured, the parent's hash in the row; never a ratio asserted."""
    parent = subprocess.run(["git", "rev-parse", "--short", "--verify", "--quiet", "HEAD~1^{commit}"], cwd=ROOT,
                            capture_output=True, text=True)
    for key in (f"against.{measure}{suffix}" for measure in ("help", "check", "open") for suffix in ("", ".cpu")):
        row = rows[key]
        if parent.returncode != 0:  # a shallow clone or no checkout: said, never a figure standing in
            assert row.value is None and "(not measured: " in row.label, row.label
            continue
        assert row.unit == "ms" and row.value > 0 and row.baseline > 0, key
        assert row.baseline_label == f"base {parent.stdout.strip()} (`HEAD~1`)", row.baseline_label
        assert "50 tool files" in row.label or key.startswith("against.help"), row.label
        assert ("CPU time" in row.label) == key.endswith(".cpu"), row.label


def worktrees() -> str:
    return subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def test_a_revision_git_has_not_is_not_measured() -> None:
    found = collect(Settings(quick=True, repeat=1, base="no-such-revision"), ("against",), progress=False)
    assert [row.key for row in found] == [f"against.{measure}{suffix}" for measure in ("help", "check", "open")
                                          for suffix in ("", ".cpu")]
    for row in found:
        assert row.value is None and row.problem() is None
        assert row.label.endswith("(not measured: no revision 'no-such-revision' in this checkout)"), row.label
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "against", "--base", "no-such-revision"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.count("(not measured: no revision 'no-such-revision'") == 6


def test_the_worktree_is_removed_on_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.against

    seen: list[Path] = []

    def interrupted(tree: bench.against.Tree, cwd: Path, home: Path) -> bool:
        seen.append(tree.folder)
        if tree.name == "base":
            assert (tree.folder / "nami_yaml" / "__init__.py").is_file() and str(tree.folder) in worktrees()
            raise KeyboardInterrupt
        return True

    monkeypatch.setattr(bench.against, "compiled", lambda tree: None)
    monkeypatch.setattr(bench.against, "probe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench.against.measure(Settings(quick=True, repeat=1))
    base = seen[-1]
    assert not base.exists() and not base.parent.exists() and str(base) not in worktrees()


def test_a_tree_without_the_opener_is_timed_on_tools_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the opener moved (or is not there yet) in one tree, both are timed on `nami tools list`; and
    the worktree is gone afterwards (only this one is looked for: other tests may have theirs meanwhile)."""
    import bench.against

    probe, seen = bench.against.probe, []

    def without_opener_in_base(tree: bench.against.Tree, cwd: Path, home: Path) -> bool:
        seen.append(tree.folder)
        return probe(tree, cwd, home) and tree.name != "base"

    monkeypatch.setattr(bench.against, "probe", without_opener_in_base)
    found = {row.key: row for row in bench.against.measure(Settings(quick=True, repeat=1))}
    assert all(not folder.exists() and str(folder) not in worktrees() for folder in seen[1:])
    if found["against.open"].value is None:  # no parent commit here: said, as above
        assert "(not measured: " in found["against.open"].label
        return
    for key in ("against.open", "against.open.cpu"):
        assert found[key].label.startswith("`nami tools list`, 50 tool files (not `open_project`"), key
        assert found[key].value > 0 and found[key].baseline > 0, key


def test_a_tree_importing_another_nami_yaml_is_an_error(tmp_path: Path) -> None:
    from bench.against import Tree, own_file

    own_file(Tree("base", tmp_path, ""), str(tmp_path / "nami_yaml" / "__init__.py"))
    with pytest.raises(RuntimeError, match="imported nami_yaml from"):
        own_file(Tree("base", tmp_path, ""), str(ROOT / "nami_yaml" / "__init__.py"))


def test_each_quick_row_is_judged_at_its_own_size(rows: dict[str, Row]) -> None:
    load = rows["load.generated"]
    assert load.label == "parse and validate 100 tool files (none kept from before)" and load.target == "< 0.05 s (100 files)"
    assert load.met == (load.value < 0.05)
    assert rows["parallel.four_reads"].target.startswith("≈ 0.2 s")  # quick naps are 0.2 s


def test_what_is_not_a_timing(rows: dict[str, Row]) -> None:
    for command in ("help", "tools_list", "check"):
        assert rows[f"startup.{command}.no_openai"].value == 0, f"nami {command} imports openai"
    assert rows["prefix.stable"].value == 100
    assert rows["tokens.total.chars"].value == rows["tokens.prompt.chars"].value + rows["tokens.tools.chars"].value
    assert rows["tokens.total.chars"].value <= BUDGET  # the same budget tests/test_lean_requests.py holds
    pi = rows["tokens.total.chars"]
    if pi.baseline is None:  # quick runs use Pi only when a full run installed it; never a constant instead
        assert pi.baseline_label.startswith("Pi: not measured (") and pi.met is None
    else:
        assert pi.baseline_label.endswith(", measured") and pi.met == (pi.value <= pi.baseline)
    # The whole library: the default request and every library tool, against the same Pi measurement.
    library = rows["tokens.library.chars"]
    groups = library_groups()
    # Sent on demand, the library adds its catalogue and load_tools, not each tool's definition.
    assert pi.value < library.value < pi.value + sum(len(files) for files in groups.values()) * 100
    assert f"({len(groups)} groups; " in library.label and library.target == "≤ 1.0× Pi's"
    assert (library.baseline, library.baseline_label) == (pi.baseline, pi.baseline_label)
    assert library.met == (None if library.baseline is None else library.value <= library.baseline)
    for key in ("shaping.docker_containers", "shaping.kubectl_pods", "shaping.terraform_show"):
        assert 0 < rows[key].value < rows[key].baseline, key  # bytes: shaping shrinks a recorded result


def test_the_command_prints_the_machine_and_the_table(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Benchmarks\n\nhand-written\n\n{BEGIN}\nold\n{END}\n\nmore text\n")
    # shaping: the section that takes no time (counted, not timed); the command's output is what is tested here.
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "shaping",
                           "--write", str(page), "--notes", "CI"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "- CPU: " in done.stdout and "- Python: " in done.stdout and "- Notes: CI" in done.stdout
    assert "| measure | nami | baseline (same run) | ratio | target |" in done.stdout
    text = page.read_text()
    assert "old" not in text and "hand-written" in text and text.endswith("more text\n")
    assert done.stdout in text


def test_a_bad_section_is_a_clear_error() -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--only", "nope"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "unknown section(s): nope" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("value", "unit", "why"), [
    (-0.4, "ms", "-0.4 ms, which cannot be"), (0, "s", "0 s, which cannot be"), (float("nan"), "ms", "is nan"),
    (101, "%", "outside 0-100"), (2, "yes/no", "neither yes nor no"), (-3, "chars", "cannot be"),
])
def test_an_impossible_figure_is_an_error_not_a_target_met(monkeypatch: pytest.MonkeyPatch, value: float,
                                                           unit: str, why: str) -> None:
    row = Row("x.y", "a figure", value, unit, 1.0 if unit != "yes/no" else None, "base", "≤ 1.10×", True)
    assert why in (row.problem() or "")
    import bench.bash_rules

    monkeypatch.setattr(bench.bash_rules, "measure", lambda settings: [row])
    with pytest.raises(BenchError, match="bash_rules: impossible figure"):
        collect(Settings(quick=True, repeat=1), ("bash_rules",), progress=False)
    from bench.__main__ import main

    assert main(["--quick", "--only", "bash_rules"]) == 1


def test_a_possible_figure_passes() -> None:
    assert Row("x", "t", 0.01, "ms", 0.02, "b").problem() is None
    assert Row("x", "t", 0, "yes/no").problem() is None and Row("x", "t", 100, "%").problem() is None


def test_a_program_missing_here_is_not_measured_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without bubblewrap the sandbox row says why it has no figure; the run is not failed for it."""
    import bench.sandbox
    from nami_yaml.runners.sandbox.probe import Availability

    monkeypatch.setattr(bench.sandbox, "availability",
                        lambda env: Availability(False, "bubblewrap (bwrap) is not installed (not on PATH)"))
    [row] = collect(Settings(quick=True, repeat=1), ("sandbox",), progress=False)
    assert row.value is None and row.problem() is None and row.ratio is None
    assert "| sandbox: extra time per call (not measured: bubblewrap (bwrap) is not installed (not on PATH)) " \
           "| not measured |" in markdown([row])
