"""Benchmark: what the sandbox adds to one tool call; prints the medians.

    python -m bench.sandbox

The same call (the bash built-in running `true`) sandboxed and not, taking turns so noise from elsewhere
hits both. In the table (`python -m bench`): the median extra time per call, against the call without
the sandbox; the target is under 15 ms. Where bubblewrap cannot work, the row says so and has no figure.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.common import Row, Settings, interleaved, timed
from nami_yaml.builtins.shell import bash
from nami_yaml.runners.sandbox.probe import availability
from nami_yaml.runtime import RuntimeContext

TARGET_MS = 15.0


def medians(repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="nami-bench-sandbox-") as folder:
        ctx = RuntimeContext(workspace=Path(folder), spill_dir=Path(folder) / "spill")
        off = replace(ctx, sandbox=replace(ctx.sandbox, mode="off"))
        bash("true", ctx=ctx)  # the probe and first-use costs
        return interleaved({"sandboxed": lambda: timed(lambda: bash("true", ctx=ctx)),
                            "unsandboxed": lambda: timed(lambda: bash("true", ctx=off))}, repeat)


def measure(settings: Settings) -> list[Row]:
    found = availability(os.environ)
    if not found.available:
        return [Row("sandbox.extra", f"sandbox: extra time per call (not measured: {found.reason})", None, "ms")]
    times = medians(max(settings.repeat, 5) * (1 if settings.quick else 20))
    extra = (times["sandboxed"] - times["unsandboxed"]) * 1000
    return [Row("sandbox.extra", "sandbox: median extra time per call (bash `true`, bwrap vs none)", extra, "ms",
                times["unsandboxed"] * 1000, "the same call unsandboxed", f"< {TARGET_MS:g} ms", extra < TARGET_MS)]


def main() -> None:
    times = medians(100)
    print(f"sandboxed {times['sandboxed'] * 1000:.2f} ms, unsandboxed {times['unsandboxed'] * 1000:.2f} ms, "
          f"extra {(times['sandboxed'] - times['unsandboxed']) * 1000:.2f} ms per call")


if __name__ == "__main__":
    main()
