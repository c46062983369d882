"""`nami batch run` with an agent.yaml that names MCP servers: each task starts its own (in its workspace,
after its setup) and stops them when it ends; the batch's own look at the project starts none."""

from __future__ import annotations

import json
import sys

from tests.programs import need_mcp

need_mcp()

from nami_yaml.testing import call, text, tool_calls  # noqa: E402
from tests.batch.conftest import BatchProject  # noqa: E402
from tests.mcp.helpers import FIXTURE, gone, server_pids  # noqa: E402


def test_each_task_starts_and_stops_its_own_servers(batch_project: BatchProject) -> None:
    # Beside the project, not in it: the project's own files are read-only to its processes (protected paths).
    pids = batch_project.folder.parent / "pids" / "server.pids"
    pids.parent.mkdir()
    with batch_project.config.open("a") as config:
        config.write(f"mcp_servers:\n  fx:\n    command: {json.dumps(sys.executable)}\n"
                     f"    args: {json.dumps([str(FIXTURE), '--pid-file', str(pids)])}\n"
                     # host pids, and the pid file's folder, outside each task's own workspace
                     f"    sandbox: {{reads: [/proc], writable: [{json.dumps(str(pids.parent))}]}}\n")
    tasks = []
    for n in range(2):
        marker = f"[m{n}]"
        batch_project.server.add_task(marker, tool_calls(call("fx__echo", {"text": f"hello {n}"})), text(f"said {n}"))
        tasks.append({"id": f"m{n}", "prompt": f"{marker} echo", "checks": [{"called": "fx__echo"}]})
    result, rows = batch_project.run(str(batch_project.tasks(tasks)), "--workers", "1")
    assert result.exit_code == 0, result.output
    assert [(row["id"], row["passed"]) for row in rows] == [("m0", True), ("m1", True)]
    started = server_pids(pids)
    assert len(started) == 2  # one per task; the batch's own check of the project starts none
    assert all(gone(pid, timeout=1) for pid, _ in started)
