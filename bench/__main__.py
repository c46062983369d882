"""`python -m bench`: every benchmark, one markdown table (docs/benchmarks.md shows the latest).

    python -m bench                     # the full run: medians of repeated runs, several minutes
    python -m bench --quick             # small sizes, one repeat, every row (CI runs this: seconds)
    python -m bench --only startup,steps
    python -m bench --only against --base main   # this checkout against another revision (default HEAD~1)
    python -m bench --write docs/benchmarks.md --notes "another job was running"

Run from the repository root. Each figure is a median of repeated runs and is shown with its baseline
measured in the same run, and their ratio; a target the issue set is marked met or missed (quick rows
against a target of the size they ran at). An impossible figure (a negative time) is an error: exit 1.
Nothing here is asserted on time: tests/bench/ only checks that every row comes out with a sane value.

The `against` section checks out --base (default HEAD~1, the parent commit) into a temporary git worktree
and times `nami --help`, `nami check` and opening a project of 1,000 tool files (50 with --quick) with
that tree's code and with this checkout's, taking turns; the worktree is removed afterwards. Outside a
git checkout, or without that revision (a shallow clone), its rows say "not measured: why".
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import time
from pathlib import Path

from bench.common import BenchError, Row, Settings, machine
from bench.table import machine_lines, markdown, replace_block

SECTIONS = ("startup", "load_tools", "against", "steps", "inprocess", "first_byte", "parallel", "memory", "tokens", "prefix",
            "batch", "bash_rules", "shaping", "sandbox")


def collect(settings: Settings, sections: tuple[str, ...], progress: bool = True) -> list[Row]:
    """Every section's rows; BenchError as soon as one comes out impossible (a negative time…)."""
    rows: list[Row] = []
    for name in sections:
        started = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        # The fake servers run in this process: what earlier sections left on its heap (1.5 million objects
        # after loading 1,000 tool files) is set aside, so that collecting it never pauses a server mid-run.
        gc.collect()
        gc.freeze()
        found = module.measure(settings)
        impossible = [f"{row.key} ({row.label}): {problem}" for row in found if (problem := row.problem())]
        if impossible:
            raise BenchError(f"{name}: impossible figure(s), the measurement is wrong: {'; '.join(impossible)}")
        rows += found
        if progress:
            sys.stderr.write(f"bench: {name} done in {time.perf_counter() - started:.1f} s\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and one repeat: checks the script runs")
    parser.add_argument("--repeat", type=int, help="runs per figure (default 5; 1 with --quick)")
    parser.add_argument("--only", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--base", default="HEAD~1", metavar="REV",
                        help="the revision the `against` section compares this checkout with (default HEAD~1)")
    parser.add_argument("--write", type=Path, help="also put the results into this page's bench block")
    parser.add_argument("--notes", default="", help="a line about the conditions, written with the machine")
    args = parser.parse_args(argv)
    sections = tuple(args.only.split(",")) if args.only else SECTIONS
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    repeat = args.repeat or (1 if args.quick else 5)
    if repeat < 1:
        parser.error("--repeat must be at least 1")
    settings = Settings(quick=args.quick, repeat=repeat, base=args.base)
    started = time.perf_counter()
    try:
        rows = collect(settings, sections)
    except BenchError as exc:
        sys.stderr.write(f"bench: {exc}\n")
        return 1
    mode = "quick (small sizes)" if args.quick else "full"
    header = machine_lines({**machine(), "Run": f"{mode}, median of {repeat}, {time.perf_counter() - started:.0f} s "
                                               f"in all, {time.strftime('%Y-%m-%d')}"}, args.notes)
    block = f"{header}\n{markdown(rows)}"
    sys.stdout.write(block)
    if args.write:
        replace_block(args.write, block)
    # Quick rows are judged too, each against a target for the size it ran at.
    missed = [row.label for row in rows if row.met is False]
    if missed:
        sys.stderr.write(f"bench: {len(missed)} target(s) missed: {'; '.join(missed)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
