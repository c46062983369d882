"""What goes to machines that share no files with this one: the project folder as data, jobs with paths
relative to it, the model settings from the environment; and the records that come back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nami_yaml.batch.job import Job
from nami_yaml.batch.ray_backend import forwarded_env, shipped_root
from nami_yaml.batch.records import collect, store
from nami_yaml.batch.ship import pack, project_files, unpack
from nami_yaml.project_request import ProjectRequest
from nami_yaml.session.store import SessionStore
from tests.programs import need


def tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)


def test_everything_but_caches_and_virtualenvs_is_shipped(tmp_path: Path) -> None:
    tree(tmp_path, {"agent.yaml": "x", "tools/t.yaml": "x", "fixtures/a/b.txt": "x", ".venv/lib/x.py": "x",
                    "tools/__pycache__/t.pyc": "x", "node_modules/m/i.js": "x"})
    assert sorted(map(str, project_files(tmp_path))) == ["agent.yaml", "fixtures/a/b.txt", "tools/t.yaml"]


def test_in_a_git_work_tree_what_git_ignores_stays_here(tmp_path: Path) -> None:
    need("git")
    tree(tmp_path, {"agent.yaml": "x", ".gitignore": "*.log\nbig/\n", "run.log": "x", "big/data.bin": "x",
                    "new.txt": "untracked but not ignored"})
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert sorted(map(str, project_files(tmp_path))) == [".gitignore", "agent.yaml", "new.txt"]


def test_a_package_unpacks_once_per_digest_with_modes_and_links(tmp_path: Path) -> None:
    source = tmp_path / "project"
    tree(source, {"agent.yaml": "model: {}\n", "scripts/run.sh": "#!/bin/sh\necho hi\n"})
    (source / "scripts" / "run.sh").chmod(0o755)
    (source / "link.sh").symlink_to("scripts/run.sh")
    data, digest = pack(source)
    machine = tmp_path / "node"
    machine.mkdir()
    first = unpack(data, digest, machine)
    assert (first / "agent.yaml").read_text() == "model: {}\n"
    assert os.access(first / "scripts" / "run.sh", os.X_OK)
    assert (first / "link.sh").is_symlink()
    (first / "marker").write_text("reused")
    assert unpack(data, digest, machine) == first and (first / "marker").exists()
    assert [p.name for p in machine.iterdir()] == [first.name]  # no staging folder left behind


def job(tmp_path: Path, workspace: object) -> Job:
    project = ProjectRequest(cwd=tmp_path / "sub", config=str(tmp_path / "agent.yaml"),
                             tools=(str(tmp_path / "tools"),), flags={"model.name": "m"})
    task = {"id": "t", "prompt": "p", **({"workspace": workspace} if workspace else {})}
    return Job(task, str(tmp_path / "tasks"), project)


def test_jobs_travel_with_paths_relative_to_the_shipped_folder(tmp_path: Path) -> None:
    fixture = tmp_path / "fixtures" / "a"
    fixture.mkdir(parents=True)
    shipped = job(tmp_path, {"path": str(fixture)}).relative_to(tmp_path)
    assert shipped.project == ProjectRequest(cwd=Path("sub"), config="agent.yaml", tools=("tools",),
                                             flags={"model.name": "m"})
    assert shipped.base == "tasks" and shipped.task["workspace"] == {"path": "../fixtures/a"}
    assert Job.from_json(json.loads(json.dumps(shipped.to_json()))) == shipped
    node = Path("/node/project")
    there = shipped.resolved(node)
    assert there.project.config == "/node/project/agent.yaml" and there.base == "/node/project/tasks"
    assert job(tmp_path, "../fixtures/a").relative_to(tmp_path).task["workspace"] == "../fixtures/a"
    assert job(tmp_path, {"git": "https://example.com/r.git"}).relative_to(tmp_path).task["workspace"] == {
        "git": "https://example.com/r.git"}
    with pytest.raises(ValueError, match="task t's workspace /elsewhere is outside"):
        job(tmp_path, "/elsewhere").relative_to(tmp_path)


def test_the_shipped_folder_is_the_projects_when_nami_runs_inside_it(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert shipped_root(tmp_path / "agent.yaml", tmp_path / "sub") == tmp_path
    assert shipped_root(tmp_path / "sub" / "agent.yaml", tmp_path) == tmp_path
    assert shipped_root(None, tmp_path / "sub") == tmp_path / "sub"


def test_the_model_settings_from_the_environment_go_with_the_jobs() -> None:
    class Settings:
        api_key_source = "$DEEPSEEK_API_KEY"

    environ = {"NAMI_MODEL": "m", "NAMI_CONFIG": "/here/agent.yaml", "DEEPSEEK_API_KEY": "k", "OTHER_KEY": "no",
               "HOME": "/root"}
    assert forwarded_env(Settings(), environ) == {"DEEPSEEK_API_KEY": "k", "NAMI_MODEL": "m"}


def test_records_from_another_machine_are_kept_here(tmp_path: Path) -> None:
    there = tmp_path / "there"
    session_id = "20260101-120000-abcdef"
    (there / "sessions").mkdir(parents=True)
    (there / "sessions" / f"{session_id}.jsonl").write_text('{"type": "session"}\n')
    (there / "audit.jsonl").write_text(json.dumps({"session": session_id, "tool": "bash"}) + "\n"
                                       + json.dumps({"session": "20260101-000000-000000", "tool": "x"}) + "\n")
    records = collect(session_id, there / "sessions" / f"{session_id}.jsonl", there / "audit.jsonl")
    assert len(records["audit"]) == 1
    here = SessionStore(tmp_path / "here" / "sessions")
    audit = tmp_path / "here" / "audit.jsonl"
    assert not store(records, audit_path=audit, sessions=here)  # same machine: already there
    assert store({**records, "host": "another-node"}, audit_path=audit, sessions=here)
    assert here.has(session_id)
    assert [json.loads(line)["tool"] for line in audit.read_text().splitlines()] == ["bash"]
