"""The example tools in tools/ run for real, through the same loader and executor as the agent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nami_yaml.paths import expand_tool_paths
from nami_yaml.registry.executor import Executor, PreparedToolCall
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture
def executor(ctx: RuntimeContext) -> Executor:
    tools, problems = load_tools(expand_tool_paths(str(TOOLS), Path("/")))
    assert problems == []
    return Executor(Registry(tools), ctx)


@pytest.fixture
def repo(workdir: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=workdir, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "a@example.com")
    git("config", "user.name", "Ann")
    for n in range(3):
        (workdir / f"f{n}.txt").write_text(f"{n}\n")
        git("add", ".")
        git("-c", f"user.name={'Bob' if n == 1 else 'Ann'}", "commit", "-q", "-m", f"commit {n}")
    git("checkout", "-q", "-b", "side")
    (workdir / "side.txt").write_text("s\n")
    git("add", ".")
    git("commit", "-q", "-m", "side work")
    git("checkout", "-q", "main")
    (workdir / "untracked.txt").write_text("u\n")
    return workdir


def test_git_status_short_by_default(executor: Executor, repo: Path) -> None:
    result = executor.execute("git_status", "{}")
    assert result.ok, result.content
    assert "## main" in result.content
    assert "?? untracked.txt" in result.content


def test_git_log_optional_flags(executor: Executor, repo: Path) -> None:
    plain = executor.execute("git_log", "{}")
    assert [line.split(" ", 1)[1] for line in plain.content.splitlines()] == ["commit 2", "commit 1", "commit 0"]
    by_bob = executor.execute("git_log", json.dumps({"author": "Bob"}))
    assert [line.split(" ", 1)[1] for line in by_bob.content.splitlines()] == ["commit 1"]
    everything = executor.execute("git_log", json.dumps({"all": True}))
    assert sorted(line.split(" ", 1)[1] for line in everything.content.splitlines()) == [
        "commit 0", "commit 1", "commit 2", "side work"]
    two = executor.execute("git_log", json.dumps({"all": True, "max_count": 2}))
    assert len(two.content.splitlines()) == 2
    on_path = executor.execute("git_log", json.dumps({"paths": ["f0.txt"]}))
    assert [line.split(" ", 1)[1] for line in on_path.content.splitlines()] == ["commit 0"]
    on_two = executor.execute("git_log", json.dumps({"paths": ["f0.txt", "f2.txt"]}))
    assert [line.split(" ", 1)[1] for line in on_two.content.splitlines()] == ["commit 2", "commit 0"]


def test_git_log_refuses_option_injection(executor: Executor, repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "stolen"
    result = executor.execute("git_log", json.dumps({"revision": f"--output={target}"}))
    assert not result.ok
    assert "starts with '-'" in result.content
    assert not target.exists()


def test_git_log_dry_run_plan(executor: Executor, repo: Path) -> None:
    prepared = executor.prepare("git_log", json.dumps({"author": "Bob", "all": False, "revision": "side"}))
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.plan()["argv"] == ["git", "log", "--oneline", "--max-count=20", "--author", "Bob", "side", "--"]
    two = executor.prepare("git_log", json.dumps({"paths": ["a", "b"]}))
    assert isinstance(two, PreparedToolCall)
    assert two.plan()["argv"][-3:] == ["--", "a", "b"]


def test_jq_filter_reads_stdin(executor: Executor) -> None:
    data = {"items": [{"metadata": {"name": "web"}}, {"metadata": {"name": "db"}}]}
    result = executor.execute("jq_filter", json.dumps({"filter": ".items[].metadata.name", "json": json.dumps(data),
                                                       "raw": True}))
    assert result.ok, result.content
    assert result.content.split() == ["web", "db"]
    broken = executor.execute("jq_filter", json.dumps({"filter": ".[", "json": "{}"}))
    assert not broken.ok
    assert "[exit code:" in broken.content


def test_disk_usage_script(executor: Executor, workdir: Path) -> None:
    (workdir / "big").mkdir()
    (workdir / "big" / "blob").write_bytes(b"x" * 300_000)
    (workdir / "small.txt").write_text("hi")
    result = executor.execute("disk_usage", json.dumps({"top": 2}))
    assert result.ok, result.content
    lines = result.content.splitlines()
    assert lines[0].endswith(" .")
    assert lines[1].endswith("./big")


def test_disk_usage_value_is_not_code(executor: Executor, workdir: Path) -> None:
    (workdir / "$(touch pwned)").mkdir()
    result = executor.execute("disk_usage", json.dumps({"path": "$(touch pwned)"}))
    assert result.ok, result.content
    assert not (workdir / "pwned").exists()
    assert "$(touch pwned)" in result.content


def test_semver_entrypoint(executor: Executor) -> None:
    assert executor.execute("semver_bump", json.dumps({"version": "v1.4.2", "part": "minor"})).content == "v1.5.0"
    assert executor.execute("semver_bump", json.dumps({"version": "2.0.0-rc.1"})).content == "2.0.1"
    bad = executor.execute("semver_bump", json.dumps({"version": "one"}))
    assert not bad.ok and bad.content == "Error: 'one' is not a semantic version like 1.4.2"
    wrong_part = executor.execute("semver_bump", json.dumps({"version": "1.0.0", "part": "huge"}))
    assert not wrong_part.ok and "$.part" in wrong_part.content
