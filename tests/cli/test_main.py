"""The top-level command: lazy sub-commands, and a help screen that loads nothing heavy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import COMMANDS, cli
from nami_yaml.testing import FakeOpenAIServer, text
from tests.helpers import script_a_sleep
from tests.sandboxing import gone, running


def test_every_listed_command_resolves_to_itself() -> None:
    context = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name
        assert command.help, name
    assert cli.get_command(context, "nope") is None


def test_help_lists_every_command_and_unknown_ones_fail() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name, (_, _, help_line) in COMMANDS.items():
        assert f"{name}  " in result.output and help_line in result.output
    assert CliRunner().invoke(cli, ["nope"]).exit_code == 2


def test_help_imports_neither_the_loader_nor_openai() -> None:
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            "try:\n    cli(['--help'], prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('jsonschema', 'yaml', 'openai', 'nami_yaml.registry.loader') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().endswith("[]"), result.stdout + result.stderr


# bash runs on a worker thread, a command tool running alone on the loop's own: SIGTERM stops both.
@pytest.mark.parametrize("tool", ["bash", "command"])
def test_sigterm_ends_nami_like_ctrl_c_and_kills_the_running_tool(fake_openai: FakeOpenAIServer,
                                                                   workdir: Path, tool: str) -> None:
    """Tools run in sessions of their own, out of reach of a signal sent to nami: SIGTERM must stop them too."""
    marker = f"60.{os.getpid() % 1000:03d}{6 if tool == 'bash' else 8}"  # its sleep is found by its argument
    extra = script_a_sleep(fake_openai, tool, marker, workdir)
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url)
    process = subprocess.Popen([sys.executable, "-m", "nami_yaml", "run", "--yes", *extra, "sleep"], cwd=workdir, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not running(f"sleep {marker}"):
            assert time.monotonic() < deadline and process.poll() is None, "the tool never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert gone(f"sleep {marker}"), "the tool outlived nami"


@pytest.mark.parametrize("module", ["nami_yaml", "nami_yaml.testing"])
def test_python_dash_m_does_not_import_modules_planted_in_the_current_folder(tmp_path: Path, module: str) -> None:
    """`python -m` puts the current folder first on sys.path: a click.py or yaml.py in a cloned repository
    would run in place of the real package."""
    for planted in ("click", "yaml", "openai", "http"):
        (tmp_path / f"{planted}.py").write_text(
            f"import pathlib; pathlib.Path({str(tmp_path / ('ran-' + planted))!r}).write_text('x')\n"
            "raise SystemExit('planted module imported')\n")
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == []
    assert done.returncode == 0, done.stderr


def test_exit_leaves_the_collector_nothing_of_the_run_to_walk(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    """At exit, Python's last garbage collection walks every object the collector tracks: after a run that
    imported the openai SDK (some 650 pydantic classes) and the project's tools, that walk was the fraction
    of a second (seconds on a loaded machine) a one-step `nami run` took after its answer. nami freezes them
    first: what that walk would visit, counted in the last exit handler, is a few objects, not the run's."""
    fake_openai.add(text("done"))
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: sys.stderr.write(f'\\ntracked={len(gc.get_objects())} '\n"
            "                                         f'frozen={gc.get_freeze_count()}\\n'))\n"
            "sys.argv = ['nami', 'run', 'hello']\n"
            "from nami_yaml.cli.main import main\n"
            "main()\n")
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url)
    done = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    counts = dict(part.split("=") for part in done.stderr.splitlines()[-1].split())
    tracked, frozen = int(counts["tracked"]), int(counts["frozen"])
    assert frozen > 100_000  # the run's objects: the SDK's classes among them
    assert tracked < 1_000, counts
