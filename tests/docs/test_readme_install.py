"""The README's install and test commands work where people paste them: on stock Debian and Ubuntu (and WSL's
Ubuntu) the system Python is "externally managed" and refuses `pip install` outside a virtual environment,
and `python3 -m venv` itself needs the python3-venv package.

So the install command makes `.venv` first, installs with that venv's pip and runs that venv's nami, and
says what to install when the venv cannot be made; the test command is the venv's Python, so it works in a
new shell. CI (.ci/run) runs both as written. Where NAMI_README_INSTALL=1 (CI sets it) and /usr/bin/python3
is an externally managed Debian Python with venv, the install is run for real in a fresh clone."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
INSTALL_VARIABLE = "NAMI_README_INSTALL"
SYSTEM_PYTHON = Path("/usr/bin/python3")
VENV_HINT = "sudo apt install python3-venv"


def block_under(heading: str) -> str:
    """The first ```bash block of the README's section ``## heading``."""
    text = README.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"the README has no section {heading!r}"
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert match is not None, f"no bash block under {heading!r}"
    return match.group(1)


def install_command() -> str:
    return block_under("Install and run")


def the_test_command() -> str:
    (line,) = block_under("Run the tests").splitlines()
    return line


def steps(command: str) -> list[str]:
    """The command's steps, in the order `&&` runs them."""
    return re.split(r"\s*&&\s*", command.strip())


def install_part(command: str) -> str:
    """The install command as written, up to the `nami run` that needs a model (and an API key)."""
    cut = command.index(" && .venv/bin/nami run ")
    return command[:cut]


def test_the_install_command_makes_the_venv_first_and_uses_only_its_pip_and_nami() -> None:
    command = install_command()
    lines = command.splitlines()
    # Pasted into a shell it is one command: every line but the last goes on after `&&`, so a failure stops it.
    assert all(line.rstrip().endswith("&&") for line in lines[:-1]), lines
    assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0
    first, *rest = steps(command)
    venv, _, otherwise = first.partition(" || ")
    assert shlex.split(venv) == ["python3", "-m", "venv", ".venv"]
    # Without python3-venv (stock Debian, Ubuntu) the venv cannot be made: the command says what to install.
    assert re.fullmatch(r'\{ echo "[^"]*' + re.escape(VENV_HINT) + r'[^"]*"; false; \}', otherwise), otherwise
    argvs = [shlex.split(step) for step in rest]
    assert all(argv[0] in (".venv/bin/python", ".venv/bin/nami") for argv in argvs), rest
    pips = [argv for argv in argvs if "pip" in argv]
    assert pips and all(argv[:4] == [".venv/bin/python", "-m", "pip", "install"] for argv in pips), pips
    assert [".venv/bin/nami", "check"] in argvs
    assert argvs[-1][:2] == [".venv/bin/nami", "run"]


def test_the_test_command_is_the_venvs_python_so_it_works_in_a_new_shell() -> None:
    assert shlex.split(the_test_command()) == [".venv/bin/python", "-m", "pytest"]


def test_without_python3_venv_the_install_command_says_what_to_install(tmp_path: Path) -> None:
    """What stock Debian's python3 does without python3-venv: `-m venv` prints that ensurepip is missing and
    fails. The command stops there, saying what to install, and runs nothing of the venv's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"
    fake.write_text("#!/bin/sh\necho 'The virtual environment was not created successfully because ensurepip is "
                    "not available.' >&2\nexit 1\n")
    fake.chmod(0o755)
    project = tmp_path / "clone"
    project.mkdir()
    result = subprocess.run(["bash", "-c", install_command()], cwd=project, capture_output=True, text=True,
                            env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 1
    assert VENV_HINT in result.stdout + result.stderr
    assert ".venv/bin" not in result.stdout + result.stderr  # neither pip nor nami was tried


def test_ci_runs_the_readme_commands_as_written() -> None:
    ci = CI.read_text(encoding="utf-8")
    assert install_part(install_command()) in ci
    assert f"\n{the_test_command()}\n" in ci
    assert "bin/activate" not in ci  # the tests run as in a new shell, never in an activated one
    assert f"export {INSTALL_VARIABLE}=1\n" in ci


def system_python_reason() -> str | None:
    """Why /usr/bin/python3 is not the Python this test is about (an externally managed Debian Python with
    venv), or None when it is."""
    if not SYSTEM_PYTHON.exists():
        return f"{SYSTEM_PYTHON} does not exist here"
    if not Path("/etc/debian_version").exists():
        return "this is not a Debian or Ubuntu system"
    probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or not (Path(probe.stdout.strip()) / "EXTERNALLY-MANAGED").exists():
        return f"{SYSTEM_PYTHON} is not externally managed (no EXTERNALLY-MANAGED in its stdlib)"
    if subprocess.run([str(SYSTEM_PYTHON), "-c", "import ensurepip, venv"], capture_output=True).returncode:
        return f"{SYSTEM_PYTHON} has no venv here (python3-venv is not installed)"
    if not (ROOT / ".git").exists():
        return f"{ROOT} is not a git checkout to clone"
    return None


def test_the_install_command_works_with_debians_own_python_in_a_fresh_clone(tmp_path: Path) -> None:
    """The README's install, as written (up to `nami run`, which needs a model), with /usr/bin first on PATH,
    in a fresh clone of this commit and no venv made beforehand: pip comes from PyPI, a minute or more."""
    if os.environ.get(INSTALL_VARIABLE) != "1":
        pytest.skip(f"the README's real install (pip from PyPI, a minute or more) runs where {INSTALL_VARIABLE}=1 "
                    "(CI sets it)")
    reason = system_python_reason()
    if reason is not None:
        pytest.skip(f"the README's real install is tried with Debian's own Python: {reason}")
    clone = tmp_path / "nami"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    assert not (clone / ".venv").exists()
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    environment["PATH"] = "/usr/bin:/bin:" + os.environ.get("PATH", "")

    def shell(command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=clone, env=environment, capture_output=True, text=True,
                              timeout=timeout)

    assert shell("command -v python3").stdout.strip() == str(SYSTEM_PYTHON)
    # Why the venv: this Python refuses what the README used to say (where Debian's pip is installed).
    if shell("python3 -m pip --version").returncode == 0:
        refused = shell("python3 -m pip install -e '.[test,mcp]'")
        assert refused.returncode != 0 and "externally-managed-environment" in refused.stdout + refused.stderr
    installed = shell(install_part(install_command()), timeout=1800)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert shell(".venv/bin/python -c 'import sys; print(sys.base_prefix)'").stdout.strip() == "/usr"
    helped = shell(".venv/bin/nami --help")
    assert helped.returncode == 0 and "check" in helped.stdout, helped.stderr
    # The test command finds pytest in a shell that never activated the venv.
    assert shell(the_test_command().replace(" -m pytest", " -m pytest --version")).returncode == 0
