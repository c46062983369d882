"""The per-session folder for saved tool output."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from nami_yaml.runners.spill import session_spill_dir, spill_dir_is_ours


def test_each_session_gets_its_own_folder(tmp_path: Path) -> None:
    base = tmp_path / "output"
    first, second = session_spill_dir(base), session_spill_dir(base)
    assert first != second and first.parent == base == second.parent
    assert oct(base.stat().st_mode & 0o777) == "0o700"


def test_old_sessions_are_pruned(tmp_path: Path) -> None:
    base = tmp_path / "output"
    old, recent = base / "session-old", base / "session-recent"
    for folder in (old, recent):
        folder.mkdir(parents=True)
        (folder / "out.txt").write_text("x")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    session_spill_dir(base)
    assert not old.exists() and recent.exists()


def test_a_planted_symlink_is_not_used(tmp_path: Path) -> None:
    home = tmp_path / "victim"
    home.mkdir()
    (home / "secret.txt").write_text("s")
    base = tmp_path / "output"
    os.symlink(home, base)
    folder = session_spill_dir(base)
    assert home not in folder.resolve().parents and folder.is_dir()
    assert not str(folder).startswith(str(base))


def test_the_session_folder_is_created_at_once_and_privately(tmp_path: Path) -> None:
    """Created when the session starts (its path is told to the model, which must not get to plant a
    symlink there first), exclusively, and readable by nobody else."""
    folder = session_spill_dir(tmp_path / "output")
    info = os.lstat(folder)
    assert stat.S_ISDIR(info.st_mode) and oct(info.st_mode & 0o777) == "0o700"
    assert spill_dir_is_ours(folder)
    os.rename(folder, tmp_path / "gone")
    folder.symlink_to(tmp_path / "gone", target_is_directory=True)
    assert not spill_dir_is_ours(folder)


def test_a_command_that_saved_nothing_leaves_no_folder_behind(workdir: Path, temp_home: Path) -> None:
    import subprocess
    import sys

    output = temp_home / ".local" / "state" / "nami" / "output"
    saving = ("from nami_yaml.runners.spill import session_spill_dir; import sys; from pathlib import Path;"
              "empty, used = session_spill_dir(Path(sys.argv[1])), session_spill_dir(Path(sys.argv[1]));"
              "(used / 'out.txt').write_text('kept')")
    subprocess.run([sys.executable, "-c", saving, str(output)], check=True)
    subprocess.run(["nami", "tools", "list"], check=True, capture_output=True)
    left = list(output.iterdir())
    assert len(left) == 1 and (left[0] / "out.txt").read_text() == "kept"


def test_the_context_is_frozen_and_a_call_gets_its_own_switch(tmp_path: Path) -> None:
    import dataclasses

    from nami_yaml.runtime import RuntimeContext, Target

    context = RuntimeContext(workspace=tmp_path / ".")
    assert context.workspace == tmp_path.resolve()
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.spill_dir = tmp_path  # type: ignore[misc]
    call = context.for_call(Target("prod"))
    assert call.target == Target("prod") and context.target is None
    assert call.cancel is not context.cancel and call.loaded_groups is context.loaded_groups
    context.cancel.set()
    assert call.cancel.is_set()  # the run's Ctrl-C reaches the call
    moved = dataclasses.replace(context, spill_dir=tmp_path / "session")
    assert moved.spill_dir == tmp_path / "session" and context.spill_dir != moved.spill_dir


def test_a_recorded_session_moves_saved_output_without_changing_a_context(tmp_path: Path, workdir: Path) -> None:
    from nami_yaml import Agent
    from nami_yaml.session.store import SessionStore
    from nami_yaml.testing import ScriptedModel, text

    (workdir / "agent.yaml").write_text("tools: {builtin: [list_dir]}\n")
    with Agent.from_config(str(workdir / "agent.yaml"), cwd=workdir, client=ScriptedModel([text("hi")])) as agent:
        before = agent.project.context
        writer = agent.record_session(SessionStore(tmp_path / "sessions"))
        after = agent.project.context
        assert after is not before and before.spill_dir != after.spill_dir
        assert writer.id in str(after.spill_dir)
        assert agent.executor.ctx is after  # the loop's calls save there
