"""Benchmark: what the sandbox adds to one tool call; prints the split.

    python -m bench.sandbox            # 300 rounds
    python -m bench.sandbox 1000

The call: the bash built-in running `true`, in a project with the library's tools and one program deny
(`rules: [{tool: bash, command: [rm], decision: deny}]`, so rm is masked in the sandbox), with this
machine's own home folder and PATH (the home view is what a user's would be). Four variants take turns in
every round, in alternating order, so that noise from elsewhere hits each of them:

- nami's call sandboxed, and the same call with ``sandbox.mode: off`` (the unsandboxed call);
- bwrap alone: ``bwrap --ro-bind / / bash -c true`` against ``bash -c true``, both started as nami starts
  a tool (the floor: bubblewrap's own start, its mount namespace, its exec);
- bwrap with the very argv nami's plan makes, started the same way (the namespaces and mounts a call asks
  for, without nami's own Python).

Each figure is the median of the per-round differences (a round's variants run back to back, so a burst
of load moves both sides of a difference). In the table (`python -m bench`): the median extra time per
call, against bare bwrap's own extra; the issue's target is 4 ms. Where bubblewrap cannot work, the row
says so and has no figure.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.common import Row, Settings, scratch, turns, write_project
from nami_yaml.builtins.shell import bash
from nami_yaml.registry.library import library_groups
from nami_yaml.runners.sandbox.bwrap import close_all, wrap
from nami_yaml.runners.sandbox.plan import bash_needs, plan_for
from nami_yaml.runners.sandbox.plan_cache import RACY
from nami_yaml.runners.sandbox.probe import availability
from nami_yaml.runtime import RuntimeContext

TARGET_MS = 4.0
TRUE = ["bash", "-c", "--", "true"]
DENY = "rules:\n  - tool: bash\n    command: [rm]\n    decision: deny\n"


def project(folder: Path) -> RuntimeContext:
    """The runtime context of a project with the whole tool library and one program deny, as `nami run`
    opens it."""
    from nami_yaml.app.project import open_project

    groups = ", ".join(sorted(library_groups()))
    config = write_project(folder, "http://127.0.0.1:9/v1", f"tools: {{library: [{groups}]}}\n{DENY}")
    return open_project(str(config), cwd=folder).context


def started(argv: list[str], cwd: Path, descriptors: tuple[int, ...] = ()) -> Callable[[], float]:
    """Starting ``argv`` as nami starts a tool (its own session, pipes for its output), to its end;
    ``descriptors``: those its argv names (/dev/null for each masked or hidden file), passed down."""
    def run() -> float:
        began = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, start_new_session=True,
                       close_fds=True, pass_fds=descriptors, check=True)
        return time.perf_counter() - began
    return run


def called(ctx: RuntimeContext) -> Callable[[], float]:
    def run() -> float:
        began = time.perf_counter()
        bash("true", ctx=ctx)
        return time.perf_counter() - began
    return run


def samples(rounds: int) -> dict[str, list[float]]:
    """Each variant's times in seconds, ``rounds`` each, taking turns."""
    with scratch() as folder:
        ctx = project(folder / "project")
        off = replace(ctx, sandbox=replace(ctx.sandbox, mode="off"))
        plan = plan_for(ctx, bash_needs(ctx), kind="bash")
        shell = [_bash(ctx), *TRUE[1:]]
        argv, kept = wrap(plan, shell, ctx.workspace)  # (reading /dev/null's descriptor again reads nothing again)
        bare = [plan.runner[0], "--ro-bind", "/", "/", "--", *shell]
        # A folder changed in the last RACY seconds is not trusted to show the next change: plans made
        # then serve one call (runners/sandbox/plan_cache.py). A user's project is older than that.
        time.sleep(RACY)
        bash("true", ctx=ctx)  # the probe and first-use costs
        try:
            return turns({"sandboxed": called(ctx), "unsandboxed": called(off),
                          "bwrap": started(argv, ctx.workspace, kept), "bare": started(bare, ctx.workspace),
                          "none": started(shell, ctx.workspace)}, rounds, alternate=True)
        finally:
            close_all(kept)


def _bash(ctx: RuntimeContext) -> str:
    import shutil

    return shutil.which("bash", path=ctx.host_env.get("PATH")) or "/bin/bash"


def extra(times: dict[str, list[float]], variant: str, against: str) -> float:
    """The median of the per-round differences, in ms."""
    return statistics.median(a - b for a, b in zip(times[variant], times[against], strict=True)) * 1000


def measure(settings: Settings) -> list[Row]:
    found = availability(os.environ)
    if not found.available:
        return [Row("sandbox.extra", f"sandbox: extra time per call (not measured: {found.reason})", None, "ms")]
    # Quick: 25 rounds, not 5: a median of five differences of a few milliseconds came out negative (bare
    # bwrap "faster" than no bwrap) once under the test suite's load, an impossible figure that fails CI.
    times = samples(max(settings.repeat, 5) * (5 if settings.quick else 60))
    ours, floor = extra(times, "sandboxed", "unsandboxed"), extra(times, "bare", "none")
    alone = statistics.median(times["unsandboxed"]) * 1000
    return [Row("sandbox.extra", "sandbox: median extra time per call (bash `true`, a project with the library's "
                                 f"tools and a deny of rm; the call unsandboxed: {alone:.2f} ms)", ours, "ms",
                floor, "bare bwrap's own extra (`bwrap --ro-bind / /`)", f"≤ {TARGET_MS:g} ms", ours <= TARGET_MS)]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    times = samples(rounds)
    for name, values in times.items():
        ordered = sorted(values)
        print(f"{name:12s} lowest {ordered[0] * 1000:6.2f}  p10 {ordered[len(ordered) // 10] * 1000:6.2f}  "
              f"median {statistics.median(ordered) * 1000:6.2f} ms")
    ours, plan_only = extra(times, "sandboxed", "unsandboxed"), extra(times, "bwrap", "none")
    floor = extra(times, "bare", "none")
    print(f"extra per call: {ours:.2f} ms (bwrap with nami's argv: {plan_only:.2f}, of which bare bwrap "
          f"{floor:.2f}; nami's own Python and the rest: {ours - plan_only:.2f}) over {rounds} rounds, "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
