"""Tool output shaping (a tool's ``output:``): the bytes of a typical result of each library tool that
shapes its output, as recorded (`nami_yaml/library/<group>/samples/`), against what the model reads after
shaping. Counted, not timed; `nami context` shows the same figures for a project's tools.

    python -m bench.shaping
"""

from __future__ import annotations

from bench.common import Row, Settings
from nami_yaml.registry.library import library_groups, shaping_samples
from nami_yaml.registry.loader import load_tools


def measure(settings: Settings) -> list[Row]:
    tools, problems = load_tools([file for files in library_groups().values() for file in files])
    if problems:
        raise RuntimeError(f"the library does not load: {problems[0]}")
    rows = []
    for sample in shaping_samples(tools):
        rows.append(Row(f"shaping.{sample.tool}", f"{sample.tool}: a recorded result as the model reads it, shaped",
                        sample.after, "bytes", baseline=sample.before, baseline_label="the tool's output as it is"))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=1)))
