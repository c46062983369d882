"""A batch run in a cloned repository's folder runs none of the repository's Python as its own: the warm
server and multiprocessing's resource tracker (started as ``python -c``) and a fresh worker leave the current
folder off ``sys.path`` (batch/forked.py, batch/isolate.py); and a sandboxed tool cannot reach the warm
server's socket, which would fork it any code outside its sandbox. Real `nami batch run` processes, started
from the project's folder as a person would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nami_yaml.batch import forked
from nami_yaml.batch.results import read_results
from nami_yaml.testing import call, text, tool_calls
from tests.batch.conftest import BatchProject
from tests.helpers import write

# What a repository would put beside its agent.yaml: packages named as the ones nami imports.
SHADOWED = ("multiprocessing", "openai", "nami_yaml", "yaml", "click", "httpx")
SHADOW = "import pathlib\npathlib.Path({marker!r}).open('a').write({name!r} + '\\n')\n"


def batch(project: BatchProject, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    nami = shutil.which("nami")
    assert nami is not None and Path(nami).parent == Path(sys.executable).parent  # this venv's console script
    tasks = project.tasks([{"id": "a", "prompt": "[a] go"}])
    return subprocess.run([nami, "batch", "run", "--yes", "--config", "agent.yaml", str(tasks), "-w", "1",
                           "-o", "results.jsonl", *options], cwd=project.folder, env=env, capture_output=True,
                          text=True, timeout=180)


@pytest.mark.parametrize("options", [(), ("--fresh-workers",)], ids=["warm", "fresh"])
def test_the_projects_python_is_never_imported_by_the_workers(batch_project: BatchProject,
                                                             options: tuple[str, ...]) -> None:
    marker = batch_project.folder.parent / "imported.txt"
    for name in SHADOWED:
        write(batch_project.folder / name / "__init__.py", SHADOW.format(marker=str(marker), name=name))
    batch_project.server.add_task("[a]", text("done"))
    result = batch(batch_project, *options)
    assert not marker.exists(), f"imported from the project's folder: {marker.read_text()}"
    assert result.returncode == 0, result.stderr
    assert [row["status"] for row in read_results(batch_project.folder / "results.jsonl")] == ["answered"]


PROBE = """\
import glob, socket, sys
found = glob.glob(sys.argv[1] + '/**/listener-*', recursive=True)
for path in found:
    try:
        socket.socket(socket.AF_UNIX).connect(path)
        print('CONNECTED', path)
    except OSError as exc:
        print('refused', path, exc)
print('sockets seen:', len(found))
"""


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")  # the system's, which every sandbox shows


@pytest.fixture
def shown_temporary() -> Iterator[Path]:
    """A TMPDIR outside /tmp and the home folder, which the sandbox shows (read-only), as /var/tmp."""
    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("no writable /var/tmp to put a TMPDIR the sandbox shows in")
    folder = Path(tempfile.mkdtemp(prefix="nami-test-tmpdir-", dir="/var/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 in /usr/bin or /bin to probe with")
@pytest.mark.skipif(not forked.available(), reason="no warm server here (not Linux, or Python before 3.11)")
def test_a_sandboxed_tool_cannot_reach_the_warm_servers_socket(batch_project: BatchProject,
                                                               shown_temporary: Path) -> None:
    # A TMPDIR the sandbox shows: the server's socket must not be made there (each task's workspace is).
    probe = write(shown_temporary / "probe.py", PROBE)
    write(batch_project.folder / "probe.yaml",
          "{name: probe, description: Looks for sockets., risk: read, "
          f"command: [{SYSTEM_PYTHON}, {probe}, {shown_temporary}]}}\n")
    with batch_project.config.open("a") as config:
        config.write("tools: {files: [probe.yaml]}\nsandbox: {mode: required}\n")
    batch_project.server.add_task("[a]", tool_calls(call("probe", {})), text("done"))
    result = batch(batch_project, "--approve", "read", env={**os.environ, "TMPDIR": str(shown_temporary)})
    assert result.returncode == 0, result.stderr
    rows = read_results(batch_project.folder / "results.jsonl")
    assert [row["status"] for row in rows] == ["answered"], rows
    [said] = [m["content"] for r in batch_project.server.requests for m in r["messages"] if m["role"] == "tool"]
    assert "sockets seen:" in said  # the probe ran, in its sandbox
    assert "CONNECTED" not in said and "sockets seen: 0" in said, said
