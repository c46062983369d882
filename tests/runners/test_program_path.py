"""Where a program is, remembered per name and PATH (runners/program_path.py), and what a call does when the
remembered file no longer starts."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.runners import process, program_path
from nami_yaml.runners.process import ProcessRequest, ProcessResult, run_process
from nami_yaml.runners.sandbox.plan import plan_for
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxSettings
from tests.programs import need_bwrap


def _program(folder: Path, name: str, says: str, mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\necho {says}\n")
    path.chmod(mode)
    return path


def _run(argv: list[str], cwd: Path, path: str) -> ProcessResult:
    return run_process(ProcessRequest(argv=argv, cwd=cwd, env={"PATH": path}, sandbox=None))


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, str]:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    return first, second, f"{first}:{second}:/usr/bin:/bin"


def test_a_name_is_found_once_and_remembered_as_a_shell_does(folders: tuple[Path, Path, str]) -> None:
    first, second, path = folders
    found = _program(second, "nami-probe-a", "second")
    assert program_path.located("nami-probe-a", {"PATH": path}) == str(found)
    _program(first, "nami-probe-a", "first")  # appears earlier on the PATH later: bash's table keeps the old one
    assert program_path.located("nami-probe-a", {"PATH": path}) == str(found)
    assert program_path.located("nami-probe-a", {"PATH": f"{second}:/bin"}) == str(found)  # another PATH: its own


def test_paths_and_relative_folders_are_never_remembered(folders: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, second, path = folders
    _program(second, "nami-probe-b", "here")
    assert program_path.located(str(second / "nami-probe-b"), {"PATH": path}) is None
    assert program_path.located("nami-probe-b", {"PATH": f"bin:{second}"}) is None  # "bin" of which cwd?
    assert program_path.located("nami-probe-nowhere", {"PATH": path}) is None


def test_a_remembered_program_that_moved_is_looked_for_again(folders: tuple[Path, Path, str], workdir: Path) -> None:
    first, second, path = folders
    remembered = _program(first, "nami-probe-c", "first")
    assert _run(["nami-probe-c"], workdir, path).stdout == "first\n"
    assert program_path.located("nami-probe-c", {"PATH": path}) == str(remembered)
    remembered.unlink()
    _program(second, "nami-probe-c", "second")
    result = _run(["nami-probe-c"], workdir, path)
    assert result.ok and result.stdout == "second\n"  # what a search of the PATH finds, as before


@pytest.mark.parametrize("how", ["removed", "not executable"])
def test_a_remembered_program_that_cannot_start_is_explained_as_without_memory(
        folders: tuple[Path, Path, str], workdir: Path, how: str) -> None:
    first, _, path = folders
    remembered = _program(first, "nami-probe-d", "first")
    assert _run(["nami-probe-d"], workdir, path).ok
    if how == "removed":
        remembered.unlink()
    else:
        remembered.chmod(0o644)
    result = _run(["nami-probe-d"], workdir, path)
    program_path.forget("nami-probe-d", {"PATH": path})  # the same call, never remembered: the same words
    fresh = _run(["nami-probe-d"], workdir, path)
    assert (result.exit_code, result.stderr) == (fresh.exit_code, fresh.stderr)
    assert result.exit_code == (127 if how == "removed" else 126)


def test_the_child_sees_the_name_it_was_called_by(workdir: Path) -> None:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    for _ in range(2):  # searched, then remembered
        result = run_process(ProcessRequest(argv=["python3", "-c", "import sys; print(sys.orig_argv[0])"],
                                            cwd=workdir, env=env, sandbox=None))
        assert result.stdout == "python3\n"


def test_a_sandboxed_call_is_never_started_from_a_remembered_place(ctx: RuntimeContext,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """In the sandbox bubblewrap looks the name up, inside its own view of the file system."""
    need_bwrap()
    asked: list[str] = []
    monkeypatch.setattr(process, "located", lambda program, env: asked.append(program))
    plan = plan_for(replace(ctx, sandbox=SandboxSettings(mode="required")))
    assert plan.active
    result = run_process(ProcessRequest(argv=["echo", "inside"], cwd=ctx.workspace,
                                        env={"PATH": os.environ.get("PATH", os.defpath)}, sandbox=plan))
    assert result.ok and result.stdout == "inside\n"
    assert asked == []
    unsandboxed = run_process(ProcessRequest(argv=["echo", "outside"], cwd=ctx.workspace,
                                             env={"PATH": os.environ.get("PATH", os.defpath)}, sandbox=None))
    assert unsandboxed.stdout == "outside\n" and asked == ["echo"]
