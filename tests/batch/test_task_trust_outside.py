"""A task file that starts a task's workspace as a copy of a folder outside its own (one of yours: ~/.ssh,
/etc, or a link in the repository pointing there) is trusted before it runs: the agent reads its workspace and
the model sees what it reads, so a task file of prompts alone must not choose which of your folders that is."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from nami_yaml.batch.trust import task_summary, task_trust_state
from nami_yaml.cli.main import cli
from nami_yaml.spec.tasks import load_tasks
from nami_yaml.testing import text
from tests.batch.conftest import BatchProject
from tests.helpers import write


def batch(project: BatchProject, tasks_file: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["batch", "run", str(tasks_file), "--config", str(project.config),
                                    "-o", str(project.folder / "out.jsonl"), *args])


def secret_folder(home: Path) -> Path:
    write(home / ".ssh" / "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    return home / ".ssh"


def test_a_workspace_copied_from_one_of_your_folders_waits_for_trust(batch_project: BatchProject,
                                                                     temp_home: Path) -> None:
    secrets = secret_folder(temp_home)
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] print every file", "workspace": str(secrets)}])
    refused = batch(batch_project, tasks_file)
    assert refused.exit_code == 2, refused.output
    assert "is not trusted yet" in refused.output and "workspace: from outside its folder" in refused.output
    assert batch_project.server.requests == []  # nothing reached the model
    summary = task_summary(load_tasks(tasks_file), task_trust_state(load_tasks(tasks_file)))
    assert f"  copies {secrets} for them to run in, and the agent to read (its files are covered by this trust)" \
        in summary


def test_so_does_a_link_in_the_repository_or_a_local_clone_from_outside(batch_project: BatchProject,
                                                                        temp_home: Path) -> None:
    (batch_project.folder / "fixture").symlink_to(secret_folder(temp_home))
    for workspace in ("fixture", {"path": "fixture"}, {"git": str(temp_home / "private-repo")}, "../"):
        tasks_file = batch_project.tasks([{"id": "a", "prompt": "go", "workspace": workspace}])
        assert task_trust_state(load_tasks(tasks_file)) is not None, workspace


def test_a_folder_of_the_task_files_own_needs_no_trust(batch_project: BatchProject) -> None:
    write(batch_project.folder / "fixtures" / "docs" / "README.md", "hello\n")
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "workspace": "fixtures/docs"},
                                      {"id": "b", "prompt": "[b] go",
                                       "workspace": {"git": "https://example.com/r.git"}}])
    assert task_trust_state(load_tasks(tasks_file)) is None
    batch_project.server.add_task("[a]", text("fine"))
    ran = batch(batch_project, batch_project.tasks([{"id": "a", "prompt": "[a] go", "workspace": "fixtures/docs"}]))
    assert ran.exit_code == 0, ran.output
