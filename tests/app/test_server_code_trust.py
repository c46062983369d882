"""A project's MCP server runs only the code trust saw: the modules beside its script, a package run with
``python -m``, and nothing imported as it runs from a folder trust skips or changed since it was trusted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.programs import need_mcp

need_mcp()

from nami_yaml.app import open_project  # noqa: E402
from tests.helpers import write  # noqa: E402
from tests.mcp.helpers import FIXTURE, NAMI  # noqa: E402

SERVE = f"import runpy, sys\nsys.argv = [{str(FIXTURE)!r}]\nrunpy.run_path({str(FIXTURE)!r}, run_name='__main__')\n"
HELPER = "import pathlib\npathlib.Path({marker!r}).write_text('{value}')\n"


def nami_here(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NAMI, *args], cwd=workdir, capture_output=True, text=True, timeout=90)


def server_entry(workdir: Path, *args: str, **extra: str) -> None:
    # The server runs the fixture from nami's tests, which a checkout under /tmp keeps from its sandbox.
    entry = {"command": sys.executable, "args": list(args), "sandbox": {"reads": [str(FIXTURE.parent)]}, **extra}
    write(workdir / "agent.yaml", "tools: {builtin: []}\nmcp_servers:\n  fx: " + json.dumps(entry) + "\n")


@pytest.mark.parametrize("layout", ["script beside agent.yaml", "python -m package", "python -Bm module"])
def test_code_a_server_imports_changed_after_trust_does_not_run(layout: str, workdir: Path) -> None:
    """`python3 server.py` importing helper.py, or `python -m srvpkg`: only the script file was fingerprinted,
    so `nami tools list` ran the changed helper after trust without a question."""
    marker = workdir / "ran.txt"
    if layout == "script beside agent.yaml":
        helper = write(workdir / "helper.py", HELPER.format(marker=str(marker), value="reviewed"))
        write(workdir / "server.py", "import helper\n" + SERVE)
        server_entry(workdir, "server.py")
    elif layout == "python -Bm module":  # fifth review: -m inside a cluster was not read, srvmod.py not covered
        helper = write(workdir / "srvmod.py", HELPER.format(marker=str(marker), value="reviewed") + SERVE)
        server_entry(workdir, "-Bm", "srvmod")
    else:
        helper = write(workdir / "srvpkg" / "helper.py", HELPER.format(marker=str(marker), value="reviewed"))
        write(workdir / "srvpkg" / "__init__.py", "")
        write(workdir / "srvpkg" / "__main__.py", "from srvpkg import helper\n" + SERVE)
        server_entry(workdir, "-m", "srvpkg")
    assert nami_here(workdir, "trust", "--yes").returncode == 0
    listed = nami_here(workdir, "tools", "list")
    assert "fx__echo" in listed.stdout, listed.stderr
    assert marker.read_text() == "reviewed"
    helper.write_text(HELPER.format(marker=str(marker), value="CHANGED"))
    again = nami_here(workdir, "tools", "list")
    assert marker.read_text() == "reviewed"
    assert "fx__echo" not in again.stdout and "not trusted yet" in again.stderr


def test_a_module_in_a_folder_trust_skips_is_not_imported_by_a_server(workdir: Path) -> None:
    """srv/node_modules/ is not fingerprinted: `import node_modules.helper` could run anything put there."""
    marker = workdir / "ran.txt"
    write(workdir / "srv" / "node_modules" / "helper.py", HELPER.format(marker=str(marker), value="unreviewed"))
    write(workdir / "srv" / "server.py", "import node_modules.helper\n" + SERVE)
    server_entry(workdir, "srv/server.py")
    assert nami_here(workdir, "trust", "--yes").returncode == 0
    listed = nami_here(workdir, "tools", "list")
    assert not marker.exists()
    assert "fx__echo" not in listed.stdout
    assert "MCP server fx" in listed.stderr and "is not covered by the trust given to" in listed.stderr


def test_a_module_changed_while_the_server_runs_is_not_imported(workdir: Path) -> None:
    """The model may write srv/lazy.py while the server runs; a later `import lazy` must not run it."""
    out, go = workdir / "out.txt", workdir / "go"
    write(workdir / "srv" / "lazy.py", "WHO = 'reviewed'\n")
    write(workdir / "srv" / "server.py", f"""\
import pathlib, threading, time

def later():
    while not pathlib.Path({str(go)!r}).exists():
        time.sleep(0.05)
    try:
        import lazy
        result = 'imported ' + lazy.WHO
    except ImportError as exc:
        result = 'refused: ' + str(exc)
    pathlib.Path({str(out)!r}).write_text(result)

threading.Thread(target=later, daemon=True).start()
""" + SERVE)
    server_entry(workdir, "srv/server.py")
    assert nami_here(workdir, "trust", "--yes").returncode == 0
    with open_project(cwd=workdir, will_run=True) as project:
        assert any(tool.name == "fx__echo" for tool in project.registry), project.take_notices()
        (workdir / "srv" / "lazy.py").write_text("WHO = 'CHANGED'\n")
        go.write_text("")
        deadline = time.monotonic() + 30
        while not out.exists():
            assert time.monotonic() < deadline, "the server never tried the import"
            time.sleep(0.05)
    assert out.read_text().startswith("refused: nami: ") and "changed since" in out.read_text()
    assert not list(workdir.rglob("__pycache__"))  # no bytecode written into the project: trust still holds


def test_the_servers_own_files_changed_between_trust_and_start_stop_it(workdir: Path) -> None:
    write(workdir / "srv" / "server.py", SERVE)
    server_entry(workdir, "srv/server.py")
    assert nami_here(workdir, "trust", "--yes").returncode == 0
    project = open_project(cwd=workdir, will_run=True, tool_servers=False)
    (workdir / "srv" / "helper.py").write_text("X = 1\n")  # written after the check, before the start
    with project:
        project.start_servers()
        notices = project.take_notices()
        assert not any(tool.name == "fx__echo" for tool in project.registry)
    assert any("fx not started: the project's files changed since it was trusted" in n for n in notices)
