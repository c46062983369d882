"""What one call may not change for later ones (app/change_watch.py), with the real bwrap and git and the
model over HTTP: files git reads only when present (a new commondir, config.worktree, a worktree's
commondir, a submodule's .git file, a repository made by git init) are undone after a sandboxed call, and
only reported after an unsandboxed one; a tool whose code changed mid-session is asked about as exec."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.agent.events import Event, NoticeEvent
from nami_yaml.app.agent import Agent
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.helpers import Answering
from tests.sandboxing import need_bwrap

FSMONITOR = "[core]\n\tfsmonitor = touch {marker}\n"


def need_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")


def git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.fixture
def repo(workdir: Path, temp_home: Path) -> Path:
    need_bwrap()
    need_git()
    git(workdir, "init", "-q")
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\n")
    return workdir


def run_bash(command: str, **options: Any) -> list[Event]:
    events: list[Event] = []
    with FakeOpenAIServer([tool_calls(call("bash", {"command": command})), text("ok")]) as server:
        Agent.from_config(base_url=server.base_url, model="m", trust=True, on_event=events.append,
                          assume_yes=True, **options).run("go")
    return events


def notices(events: list[Event]) -> str:
    return "\n".join(event.message for event in events if isinstance(event, NoticeEvent))


def fsmonitor_runs(folder: Path, marker: Path) -> bool:
    """Whether the person's own `git status` there runs the planted fsmonitor."""
    git(folder, "status")
    return marker.exists()


def test_a_new_commondir_that_redirects_git_is_moved_aside(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "fsmonitor-ran"
    (repo / "evil").mkdir()
    command = (f"printf '{FSMONITOR.format(marker=marker)}' > evil/config && mkdir -p evil/objects evil/refs && "
               f"printf '../evil\\n' > .git/commondir")
    events = run_bash(command)
    assert not (repo / ".git" / "commondir").exists()
    assert (repo / ".git" / "commondir.nami-moved").read_text() == "../evil\n"
    assert "commondir" in notices(events) and "moved it to" in notices(events)
    assert not fsmonitor_runs(repo, marker)


def test_a_config_worktree_made_by_a_call_is_moved_aside(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "fsmonitor-ran"
    run_bash(f"printf '{FSMONITOR.format(marker=marker)}' > .git/config.worktree")
    assert not (repo / ".git" / "config.worktree").exists()
    assert not fsmonitor_runs(repo, marker)


def test_a_repointed_submodule_git_file_is_put_back(repo: Path, tmp_path: Path) -> None:
    (repo / "lib").mkdir()
    (repo / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    (repo / "attack").mkdir()
    run_bash("printf 'gitdir: ../attack\\n' > lib/.git")
    assert (repo / "lib" / ".git").read_text() == "gitdir: ../.git/modules/lib\n"
    assert (repo / "lib" / ".git.nami-moved").read_text() == "gitdir: ../attack\n"


def test_a_new_git_file_in_a_folder_is_moved_aside(repo: Path) -> None:
    (repo / "sub").mkdir()
    events = run_bash("printf 'gitdir: /somewhere\\n' > sub/.git")
    assert not (repo / "sub" / ".git").exists() and (repo / "sub" / ".git.nami-moved").exists()
    assert "sub/.git" in notices(events)


def test_a_linked_worktree_commondir_made_by_a_call_is_moved_aside(repo: Path) -> None:
    run_bash("mkdir -p .git/worktrees/w && printf '../..\\n' > .git/worktrees/w/gitdir && "
             "printf '/tmp/elsewhere\\n' > .git/worktrees/w/commondir")
    assert not (repo / ".git" / "worktrees" / "w" / "commondir").exists()


def test_git_init_with_an_fsmonitor_where_there_was_no_repository(workdir: Path, temp_home: Path,
                                                                  tmp_path: Path) -> None:
    need_bwrap()
    need_git()
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\n")
    marker = tmp_path / "fsmonitor-ran"
    events = run_bash(f"git init -q && git config core.fsmonitor 'touch {marker}'")
    assert (workdir / ".git" / "config.nami-moved").exists() and not (workdir / ".git" / "config").exists()
    assert not fsmonitor_runs(workdir, marker)
    assert git(workdir, "status").returncode == 0  # git works without the config it moved aside
    assert ".git/config" in notices(events)


def test_an_unsandboxed_call_is_reported_not_undone(repo: Path) -> None:
    (repo / "agent.yaml").write_text("tools: {builtin: [bash]}\nsandbox: {mode: off}\n")
    events = run_bash("printf '../x\\n' > .git/commondir")
    assert (repo / ".git" / "commondir").read_text() == "../x\n"
    assert "ran unsandboxed" in notices(events) and "commondir" in notices(events)


def test_ordinary_git_work_is_left_alone(repo: Path) -> None:
    events = run_bash("echo a > a && git add a && git -c user.name=n -c user.email=e commit -qm one && "
                      "git branch other")
    assert git(repo, "log", "--oneline").stdout.count("\n") == 1
    assert notices(events) == "" or "git" not in notices(events)
    assert not list(repo.rglob("*.nami-moved*"))


# -- code a tool runs -----------------------------------------------------------------------------------

@pytest.fixture
def python_tool(workdir: Path, temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A read tool that runs `python3 -m mytool` from the workspace, at the project's root; writes allowed.
    (Python's own __pycache__ would count as code the run changed: a .pyc runs in place of its source.)"""
    need_bwrap()
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (workdir / "mytool.py").write_text("import json\nprint(json.dumps({'ok': True}))\n")
    (workdir / "tools").mkdir()
    (workdir / "tools" / "report.yaml").write_text(
        "name: report\ndescription: Report.\nrisk: read\ncommand: [python3, -m, mytool]\n")
    (workdir / "agent.yaml").write_text("tools: {builtin: [write_file], files: [tools/]}\n"
                                        "permissions: {write: allow}\n")
    return workdir


def run_calls(calls: list[Any], **options: Any) -> tuple[list[dict[str, Any]], list[Event]]:
    events: list[Event] = []
    with FakeOpenAIServer([tool_calls(*calls), text("ok")]) as server:
        Agent.from_config(base_url=server.base_url, model="m", trust=True, on_event=events.append,
                          **options).run("go")
        return server.requests, events


PLANT = call("write_file", {"path": "json.py", "content": "import os\ndef dumps(x):\n    return 'PLANTED'\n"})


def test_a_module_planted_where_a_python_tool_imports_makes_its_next_call_an_exec_question(python_tool: Path) -> None:
    requests, _ = run_calls([PLANT, call("report", {})])
    result = requests[1]["messages"][-1]["content"]
    assert "PLANTED" not in result
    assert "changed during this session" in result and "json.py" in result


def test_a_yes_to_the_question_runs_it_and_accepts_the_change(python_tool: Path) -> None:
    person = Answering(True)
    requests, _ = run_calls([PLANT, call("report", {}), call("report", {})], approve=person)
    assert [r.pending.source for r in person.asked] == ["permissions.exec"]
    assert "runs code changed during this session" in (person.asked[0].pending.reason or "")
    results = [m["content"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert results[1].strip() == "PLANTED" and results[2].strip() == "PLANTED"


def test_a_tool_whose_code_did_not_change_is_not_asked(python_tool: Path) -> None:
    requests, _ = run_calls([call("write_file", {"path": "notes.md", "content": "x"}), call("report", {})])
    assert requests[1]["messages"][-1]["content"].strip() == '{"ok": true}'


def test_a_call_that_makes_more_folders_than_are_looked_at_is_reported(repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nami_yaml.app.change_watch.MAX_FOLDERS", 30)
    events = run_bash("mkdir -p many && cd many && for i in $(seq 1 40); do mkdir d$i; done")
    assert "more than 30 folders" in notices(events)


def test_hooks_in_the_folder_core_hooks_path_names_are_undone(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    git(repo, "config", "core.hooksPath", ".githooks")
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    events = run_bash(f"printf '#!/bin/sh\\ntouch {marker}\\n' > .githooks/pre-commit && "
                      f"printf '#!/bin/sh\\ntouch {marker}\\n' > .githooks/post-commit && chmod +x .githooks/*")
    assert (repo / ".githooks" / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (repo / ".githooks" / "post-commit").exists()
    assert "pre-commit" in notices(events) and "post-commit" in notices(events)


@pytest.mark.parametrize("where", [".", "src"])
def test_a_folder_laid_out_as_a_git_directory_has_its_config_moved_aside(workdir: Path, temp_home: Path,
                                                                       where: str) -> None:
    need_bwrap()
    need_git()
    (workdir / "src").mkdir()
    (workdir / "agent.yaml").write_text("tools: {builtin: [bash]}\n")
    run_bash(f"cd {where} && mkdir -p objects refs && echo 'ref: refs/heads/main' > HEAD && "
             "printf '[core]\\n\\tpager = touch /tmp/x\\n' > config")
    assert not (workdir / where / "config").exists() and (workdir / where / "config.nami-moved").exists()


def test_a_submodule_planted_in_a_folder_nami_does_not_walk_is_undone(repo: Path, tmp_path: Path) -> None:
    """The index names it (writable in the sandbox); the folder walk skips node_modules."""
    marker = tmp_path / "fsmonitor-ran"
    run_bash(f"mkdir -p node_modules/evil && cd node_modules/evil && git init -q && "
             f"git config core.fsmonitor 'touch {marker}' && cd ../.. && "
             "git update-index --add --cacheinfo 160000,0123456789abcdef0123456789abcdef01234567,node_modules/evil")
    assert not fsmonitor_runs(repo, marker)
    assert (repo / "node_modules" / "evil" / ".git" / "config.nami-moved").exists()
