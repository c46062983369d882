"""Benchmark: how long reading hostile command lines for bash rules takes; prints the time per line.

    python -m bench.bash_rules

Commands run by other commands (`find -exec find -exec …`, `sudo bash sudo bash …`) are searched for
hidden denied commands; that search used to cost the square of the line's words at every level (a
3 KB line took gigabytes). Every line here should take well under a second. In the table (`python -m
bench`): the slowest line, against Python's own `shlex.split` of it.
"""

from __future__ import annotations

import shlex
import time

from bench.common import Row, Settings, median_time
from nami_yaml.policy.bash import analyse

LINES = {
    "find -exec x300": "find -exec " * 300 + "x",
    "sudo bash x2000": "sudo bash " * 2000 + "x",
    "nested bash -c x3000": "bash -c \"" + "bash -c " * 3000 + "rm\"",
    "xargs + 45,000 words": "xargs " + "a " * 45_000 + "rm x",
    "ls; x30,000": "ls;" * 30_000,
}


def measure(settings: Settings) -> list[Row]:
    times = {name: (median_time(lambda line=line: analyse(line), settings.repeat, warmup=0),
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
        analysis = analyse(line)
        elapsed = time.perf_counter() - started
        print(f"{name:<24} {len(line):>7,} chars  {elapsed:6.3f} s  {len(analysis.seen):>6,} commands seen")


if __name__ == "__main__":
    main()
