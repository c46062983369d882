"""Memory: nami's own peak RSS (the `nami` process, not the tool's processes) while `nami run` calls a tool
that prints 500 MB, and while it resumes a 500-step session; both against a one-step `nami run` whose tool
prints 1 KB. The peak is VmHWM from /proc/PID/status, read every 10 ms until the process exits.

    python -m bench.memory
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bench.common import Row, Settings, bench_env, median, nami_command, scratch, write_project
from bench.steps import steps_responder
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls

TOOLS = """\
name: flood
description: Prints N bytes of text.
risk: read
parameters: {type: object, properties: {bytes: {type: integer}}, required: [bytes]}
script: 'yes "nami benchmark line, long enough to look like real output from a tool." | head -c "$bytes"'
"""
PAGE = """\
name: ping
description: Prints a page of text.
risk: read
parameters: {type: object, properties: {}}
command: [cat, page.txt]
"""
TARGET_MB = 100


def peak_rss_mb(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Peak resident memory of the process itself (VmHWM), in MB; its children are not counted."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    status = Path(f"/proc/{process.pid}/status")
    peak = 0
    while process.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError):  # exited between poll() and the read
            pass
        time.sleep(0.01)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}")
    return peak / 1024


def measure(settings: Settings) -> list[Row]:
    size = settings.size(500_000_000, 5_000_000)
    steps = 500
    rows = []
    with scratch() as home, FakeOpenAIServer() as server:
        folder = home / "project"
        (folder / "tools").mkdir(parents=True)
        (folder / "tools" / "flood.yaml").write_text(TOOLS)
        (folder / "tools" / "ping.yaml").write_text(PAGE)
        (folder / "page.txt").write_text("a line of a page that a tool printed, as tools do\n" * 10)
        config = write_project(folder, server.base_url, f"tools: {{builtin: default, files: [tools/]}}\n"
                                                        f"limits: {{max_steps: {steps + 10}}}\n"
                                                        "compaction: {enabled: false}\n")
        env = bench_env(home)
        run = [*nami_command(), "run", "--config", str(config)]

        def flood(amount: int) -> float:
            server.add(tool_calls(call("flood", {"bytes": amount})), text("printed"))
            return peak_rss_mb([*run, "flood"], folder, env)

        small = median([flood(1000) for _ in range(settings.repeat)])
        big = median([flood(size) for _ in range(settings.repeat)])
        rows.append(Row("memory.flood", f"peak RSS of nami, a tool prints {size / 1e6:,.0f} MB", big, "MB", small,
                        "its tool prints 1 KB", f"< {TARGET_MB} MB", big < TARGET_MB))

        if settings.quick:  # the last flood run's session (a call and its answer): one process fewer
            steps = 2
            server.add(*(text("resumed") for _ in range(settings.repeat)))
        else:
            server.responder = steps_responder
            subprocess.run([*run, f"work: steps={steps}"], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        resumed = median([peak_rss_mb([*run, "--continue", "and now?"], folder, env)
                          for _ in range(settings.repeat)])
        rows.append(Row("memory.resume", f"peak RSS of nami, resuming a {steps}-step session", resumed, "MB", small,
                        "a fresh one-step run"))
    return rows


if __name__ == "__main__":
    from bench.table import print_rows

    print_rows(measure(Settings(quick=False, repeat=3)))
