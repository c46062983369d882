"""The vetted start of a Python MCP server (runners/vetting.py, runners/vetted_python.py), as real
processes: the server runs as `python script.py` or `python -m module` would, and imports from its code
folders only the bytes trust hashed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nami_yaml.paths import walk
from nami_yaml.runners.vetting import CodeVetting, python_command
from tests.helpers import write

REPORT = "import sys, helper\nprint(__name__, __file__, sys.argv, sys.path[0], helper.WHO)\n"


def vetting(folder: Path) -> CodeVetting:
    hashes = {file: hashlib.sha256(file.read_bytes()).hexdigest() for file in walk(folder)}
    return CodeVetting.of(folder / "agent.yaml", [folder], hashes)


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("argv", "expected"), [
    (["python3", "s.py", "a"], ([], "script", "s.py", ["a"])),
    (["/usr/bin/python3.12", "-u", "-X", "utf8", "-Wignore", "s.py"], (["-u", "-X", "utf8", "-Wignore"], "script", "s.py", [])),
    (["python", "-OO", "-m", "pkg.mod", "--port", "1"], (["-OO"], "module", "pkg.mod", ["--port", "1"])),
    (["python3", "-c", "print(1)", "a"], ([], "code", "print(1)", ["a"])),
    (["python3", "-i", "s.py"], None),
    (["python3", "--check-hash-based-pycs", "never", "s.py"], None),
    (["python3"], None),
    (["node", "s.js"], None),
    (["uv", "run", "s.py"], None),
])
def test_which_command_lines_nami_can_read(argv: list[str], expected: object) -> None:
    assert python_command(argv) == expected


def test_a_script_runs_as_python_would_run_it(tmp_path: Path) -> None:
    write(tmp_path / "srv" / "s.py", REPORT)
    write(tmp_path / "srv" / "helper.py", "WHO = 'helper'\n")
    argv = vetting(tmp_path / "srv").launch([sys.executable, "srv/s.py", "x"], tmp_path / "m.json")
    done = run(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["__main__", str(tmp_path / "srv" / "s.py"), "['srv/s.py',", "'x']", str(tmp_path / "srv"), "helper"]
    assert run([sys.executable, "srv/s.py", "x"], tmp_path).stdout == done.stdout  # the same, unvetted


def test_a_module_runs_as_python_dash_m_would_run_it(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "__main__.py", "import sys\nfrom pkg import helper\nprint(__name__, sys.argv[1:], helper.WHO)\n")
    write(tmp_path / "pkg" / "helper.py", "WHO = 'helper'\n")
    argv = vetting(tmp_path / "pkg").launch([sys.executable, "-m", "pkg", "y"], tmp_path / "m.json")
    done = run(argv, tmp_path)
    assert (done.returncode, done.stdout) == (0, "__main__ ['y'] helper\n"), done.stderr


@pytest.mark.parametrize("change", ["edited", "added", "in node_modules", "the script itself"])
def test_code_trust_did_not_see_is_refused(change: str, tmp_path: Path) -> None:
    folder = tmp_path / "srv"
    write(folder / "s.py", REPORT)
    write(folder / "helper.py", "WHO = 'helper'\n")
    vetted = vetting(folder)
    if change == "edited":
        (folder / "helper.py").write_text("WHO = 'CHANGED'\n")
    elif change == "added":
        (folder / "helper.py").unlink()
        write(folder / "helper" / "__init__.py", "WHO = 'new package'\n")
    elif change == "in node_modules":
        (folder / "s.py").write_text("import node_modules.x\n")
        vetted = vetting(folder)
        write(folder / "node_modules" / "x.py", "print('ran unreviewed code')\n")
    else:
        (folder / "s.py").write_text("print('ran a changed script')\n")
    done = run(vetted.launch([sys.executable, "srv/s.py"], tmp_path / "m.json"), tmp_path)
    assert done.returncode == 1 and "ran" not in done.stdout and "CHANGED" not in done.stdout
    assert "nami: " in done.stderr and ("changed since" in done.stderr or "not covered by the trust" in done.stderr)


def test_shipped_bytecode_is_not_run_and_none_is_written(tmp_path: Path) -> None:
    """A __pycache__/*.pyc matching the source's size and time would be run by Python instead of it."""
    folder = tmp_path / "srv"
    write(folder / "s.py", "import helper\nprint(helper.WHO)\n")
    write(folder / "helper.py", "WHO = 'source'\n")
    cached = folder / "__pycache__" / f"helper.{sys.implementation.cache_tag}.pyc"
    evil = write(tmp_path / "evil" / "helper.py", "WHO = 'EVIL!!'\n")  # as long as the source
    stat = (folder / "helper.py").stat()
    os.utime(evil, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the .pyc records the source's size and time
    run([sys.executable, "-c", f"import py_compile; py_compile.compile({str(evil)!r}, cfile={str(cached)!r})"], tmp_path)
    assert run([sys.executable, "srv/s.py"], tmp_path).stdout == "EVIL!!\n"  # what plain Python does
    shipped = cached.read_bytes()
    done = run(vetting(folder).launch([sys.executable, "srv/s.py"], tmp_path / "m.json"), tmp_path)
    assert done.stdout == "source\n", done.stderr
    assert list((folder / "__pycache__").iterdir()) == [cached] and cached.read_bytes() == shipped


def test_a_command_line_nami_cannot_read_runs_as_written(tmp_path: Path) -> None:
    argv = ["uv", "run", "srv/s.py"]
    assert vetting(tmp_path).launch(argv, tmp_path / "m.json") == argv
    assert not (tmp_path / "m.json").exists()


def test_inline_code_is_vetted_too(tmp_path: Path) -> None:
    write(tmp_path / "srv" / "helper.py", "WHO = 'helper'\n")
    vetted = vetting(tmp_path / "srv")
    argv = vetted.launch([sys.executable, "-c", "import sys, helper; print(helper.WHO, sys.argv[1:])", "x"],
                         tmp_path / "m.json")
    assert run(argv, tmp_path / "srv").stdout == "helper ['x']\n"
    (tmp_path / "srv" / "helper.py").write_text("WHO = 'CHANGED'\n")
    changed = run(argv, tmp_path / "srv")
    assert changed.returncode == 1 and "changed since" in changed.stderr


def test_a_script_outside_the_code_folders_runs_as_it_is(tmp_path: Path) -> None:
    """PYTHONPATH=lib makes lib/ the server's code; its script elsewhere (installed, say) is not vetted."""
    write(tmp_path / "lib" / "shared.py", "WHO = 'shared'\n")
    script = write(tmp_path / "elsewhere" / "s.py", "import shared\nprint(shared.WHO)\n")
    argv = vetting(tmp_path / "lib").launch([sys.executable, str(script)], tmp_path / "m.json")
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tmp_path / "lib")})
    assert (done.returncode, done.stdout) == (0, "shared\n"), done.stderr
