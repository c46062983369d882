"""Benchmark: how long reading hostile command lines for bash rules takes; prints the time per line.

    python bench/bash_rules.py

Commands run by other commands (`find -exec find -exec …`, `sudo bash sudo bash …`) are searched for
hidden denied commands; that search used to cost the square of the line's words at every level (a
3 KB line took gigabytes). Every line here should take well under a second.
"""

from __future__ import annotations

import time

from nami_yaml.policy.bash import analyse

LINES = {
    "find -exec x300": "find -exec " * 300 + "x",
    "sudo bash x2000": "sudo bash " * 2000 + "x",
    "nested bash -c x3000": "bash -c \"" + "bash -c " * 3000 + "rm\"",
    "xargs + 45,000 words": "xargs " + "a " * 45_000 + "rm x",
    "ls; x30,000": "ls;" * 30_000,
}


def main() -> None:
    for name, line in LINES.items():
        started = time.perf_counter()
        analysis = analyse(line)
        elapsed = time.perf_counter() - started
        print(f"{name:<24} {len(line):>7,} chars  {elapsed:6.3f} s  {len(analysis.seen):>6,} commands seen")


if __name__ == "__main__":
    main()
