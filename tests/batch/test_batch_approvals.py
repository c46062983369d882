"""`nami batch run` with ``approvals.via: queue``: a task waits for an answer from the queue, and the wait
does not count against its wall time."""

from __future__ import annotations

import subprocess
import sys
import time

from nami_yaml.batch.results import read_results
from nami_yaml.testing import call, text, tool_calls
from tests.approvals.conftest import pending_ids
from tests.batch.conftest import BatchProject
from tests.helpers import run_nami


def test_a_task_waits_for_the_queue_beyond_its_wall_time(batch_project: BatchProject) -> None:
    with batch_project.config.open("a") as file:
        file.write("approvals: {via: queue, path: queue, timeout: 120}\n")
    batch_project.server.add_task("[w]", tool_calls(call("write_file", {"path": "out.txt", "content": "v"})),
                                  text("written"))
    tasks = batch_project.tasks([{"id": "w", "prompt": "[w] write it", "limits": {"wall_time": 3},
                                  "checks": [{"file_contains": {"path": "out.txt", "text": "v"}}]}])
    output = batch_project.folder / "results.jsonl"
    queue = batch_project.folder / "queue"
    batch = subprocess.Popen([sys.executable, "-m", "nami_yaml", "batch", "run", "--yes", "--config",
                              str(batch_project.config), str(tasks), "-o", str(output)],
                             cwd=batch_project.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not pending_ids(queue) and time.monotonic() < deadline and batch.poll() is None:
            time.sleep(0.1)
        assert pending_ids(queue), batch.communicate()
        [approval_id] = pending_ids(queue)
        time.sleep(5)  # longer than the task's wall time: only the wait has gone on
        answered = run_nami(None, "approvals", "--queue", str(queue), "approve", approval_id,
                            cwd=batch_project.folder)
        assert answered.returncode == 0, answered.stderr
        _, err = batch.communicate(timeout=120)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.communicate()
    [row] = read_results(output)
    assert row["status"] == "answered" and row["passed"] is True, (row, err)
