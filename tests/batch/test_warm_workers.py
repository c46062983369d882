"""Batch workers forked from a warm server (batch/forked.py): each task still in a process of its own, a
fresh fork every time (nothing one task does reaches the next), with the batch's environment of now; and
``--fresh-workers`` still starts each as a new Python."""

from __future__ import annotations

import json
import os

from nami_yaml.testing import call, text, tool_calls
from tests.batch.conftest import BatchProject

TOOL = "{name: where, description: Says where it runs., risk: read, entrypoint: 'where_tools:where'}\n"
MODULE = """\
import json, os
import nami_yaml.batch.warm as warm

def where() -> str:
    seen = getattr(warm, "touched_by_a_task", False)
    warm.touched_by_a_task = True  # a module the server imported: a later task must not see this
    os.environ["NAMI_TEST_TOUCHED"] = "yes"
    with open({log!r}, "a") as log:
        log.write(json.dumps({{"pid": os.getpid(), "ppid": os.getppid(), "seen": seen, "sid": os.getsid(0),
                              "env": os.environ.get("NAMI_TEST_FROM_BATCH")}}) + "\\n")
    return "ok"
"""


def run_two(project: BatchProject, *options: str) -> list[dict[str, object]]:
    log = project.folder / "where.log"
    (project.folder / "where.yaml").write_text(TOOL)
    (project.folder / "where_tools.py").write_text(MODULE.format(log=str(log)))
    with project.config.open("a") as config:
        config.write("sandbox: {mode: off}\n")  # the entry point runs inside the worker itself
    for name in ("a", "b"):
        project.server.add_task(f"[{name}]", tool_calls(call("where", {})), text("done"))
    tasks = [{"id": name, "prompt": f"[{name}] go"} for name in ("a", "b")]
    result, rows = project.run(str(project.tasks(tasks)), "-w", "1", "-t", str(project.folder / "where.yaml"),
                               "--approve", "read", *options)
    assert result.exit_code == 0, result.output
    assert [r["status"] for r in rows] == ["answered", "answered"]
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_each_task_is_a_fresh_fork_of_one_warm_server(batch_project: BatchProject, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NAMI_TEST_FROM_BATCH", "now")  # set after earlier tests may have started a server
    first, second = run_two(batch_project)
    assert first["pid"] != second["pid"]  # a process per task
    assert first["ppid"] == second["ppid"] != os.getpid()  # both forked by the server, not started by the batch
    assert first["sid"] == first["pid"] and second["sid"] == second["pid"]  # each in a session of its own
    assert first["seen"] is False and second["seen"] is False  # nothing of the first task reached the second
    assert first["env"] == second["env"] == "now"
    assert "NAMI_TEST_TOUCHED" not in os.environ


def test_fresh_workers_are_started_by_the_batch(batch_project: BatchProject) -> None:
    first, second = run_two(batch_project, "--fresh-workers")
    assert first["ppid"] == second["ppid"] == os.getpid()
    assert first["seen"] is False and second["seen"] is False


def test_the_warm_server_leaves_nothing_for_a_tasks_model_client_to_import() -> None:
    """A task's first request makes the SDK's HTTP client, whose library imports its transport only then:
    unless the server did so before forking, every task paid for that import again (most of its CPU)."""
    import subprocess
    import sys

    probe = ("import sys\nimport nami_yaml.batch.warm\nfrom nami_yaml.model.client import _http_client\n"
             "before = set(sys.modules)\n_http_client().close()\nprint(sorted(set(sys.modules) - before))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.stdout.strip() == "[]", done.stdout
