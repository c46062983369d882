"""Benchmark: load N tool files (default 1,000) through the real loader; prints the time taken.

    python bench/load_tools.py [N]

The goal is "well under a second" for 1,000 files. Timing lives here, not in unit tests, because test
machines are noisy.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.loader import load_tools

TEMPLATE = """\
name: tool_{n}
description: Example tool number {n}; shows recent commits filtered by author.
risk: read
parameters:
  type: object
  properties:
    author: {{type: string, description: Author to filter by.}}
    max_count: {{type: integer, minimum: 1, maximum: 100, default: 20}}
    all: {{type: boolean, default: false}}
  required: [author]
command: [git, log, "--max-count={{max_count}}", --author, "{{author}}", [--all, "{{all}}"]]
timeout: 30
"""


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as folder:
        for n in range(count):
            Path(folder, f"tool_{n:04}.yaml").write_text(TEMPLATE.format(n=n))
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            tools, problems = load_tools(expand_tool_paths(folder, Path("/")))
            best = min(best, time.perf_counter() - start)
            assert len(tools) == count and not problems, problems[:3]
    print(f"loaded {count} tool files in {best * 1000:.0f} ms (best of 3)")


if __name__ == "__main__":
    main()
