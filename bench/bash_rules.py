"""Benchmark: how long reading hostile command lines for bash rules takes; prints the time per line.

    python -m bench.bash_rules

Commands run by other commands (`find -exec find -exec …`, `sudo bash sudo bash …`) are searched for
hidden denied commands; that search used to cost the square of the line's words at every level (a
3 KB line took gigabytes). A line is read as a rule decision reads it: parsed, each command read with the
table of inert options (an allow), and read for programs it could run without naming them (a deny:
words read as command lines, runners' tails). Every line here should take well under a second. In the
table (`python -m bench`): the slowest line, against Python's own `shlex.split` of it.
"""

from __future__ import annotations

import shlex
import time

from bench.common import Row, Settings, median_time
from nami_yaml.shell.bash import Analysis, analysed
from nami_yaml.shell.hidden import hidden_reason, names_in
from nami_yaml.shell.plain import not_plain, read_plainly

LINES = {
    "find -exec x300": "find -exec " * 300 + "x",
    "sudo bash x2000": "sudo bash " * 2000 + "x",
    "nested bash -c x3000": "bash -c \"" + "bash -c " * 3000 + "rm\"",
    "xargs + 45,000 words": "xargs " + "a " * 45_000 + "rm x",
    "ls; x30,000": "ls;" * 30_000,
    "quoted words x10,000": "make " + "'a | b' " * 10_000,
    "sed -e x5,000": "sed " + "-e p " * 5_000 + "f",
    "$( nested x300": "echo " + "$(echo " * 300 + ")" * 300,
    "ls --color x20,000": "ls " + "--color=never " * 7_000,
}


def read(line: str) -> Analysis:
    """The reading of one rule decision with allow and deny rules: nothing cached from an earlier run."""
    analysed.cache_clear()
    read_plainly.cache_clear()
    analysis = analysed(line)
    for command in analysis.commands:
        not_plain(command.words, 1)
    hidden_reason.__wrapped__(line)  # type: ignore[attr-defined]
    names_in(line)
    return analysis


def measure(settings: Settings) -> list[Row]:
    times = {name: (median_time(lambda line=line: read(line), settings.repeat, warmup=0),
                    median_time(lambda line=line: shlex.split(line, posix=True), settings.repeat, warmup=0))
             for name, line in LINES.items()}
    name = max(times, key=lambda n: times[n][0])
    ours, theirs = times[name]
    return [Row("bash_rules.slowest", f"bash rules: slowest of {len(LINES)} hostile lines (`{name}`, "
                                      f"{len(LINES[name]):,} chars)", ours * 1000, "ms", theirs * 1000,
                "`shlex.split` of it", "< 1 s", ours < 1)]


def main() -> None:
    for name, line in LINES.items():
        started = time.perf_counter()
        analysis = read(line)
        elapsed = time.perf_counter() - started
        print(f"{name:<24} {len(line):>7,} chars  {elapsed:6.3f} s  {len(analysis.seen):>6,} commands seen")


if __name__ == "__main__":
    main()
