"""Library tools against the real programs, where this machine has them: git, jq, terraform, curl, df, du and
ps do their work for real; kubectl, docker, systemctl, journalctl and helm (no cluster, daemon or systemd
here) at least parse every command the library renders: no "unknown flag", no usage screen."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nami_yaml.runtime import RuntimeContext
from tests.library.conftest import LibraryRunner, terraform_config
from tests.library.test_rendered_argv import CASES
from tests.local_http import QuietHandler, serving
from tests.programs import need, needs
from tests.sandboxing import need_bwrap

# -- git --------------------------------------------------------------------------------------------

@pytest.fixture
def repo(workdir: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=workdir, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "ann@example.com")
    git("config", "user.name", "Ann")
    for n in range(3):
        (workdir / f"f{n}.txt").write_text(f"line {n}\n")
        git("add", ".")
        git("-c", f"user.name={'Bob' if n == 1 else 'Ann'}", "commit", "-q", "-m", f"commit {n}")
    git("checkout", "-q", "-b", "release/1")
    (workdir / "side.txt").write_text("s\n")
    git("add", ".")
    git("commit", "-q", "-m", "side work")
    git("checkout", "-q", "main")
    (workdir / "f0.txt").write_text("line 0\nchanged\n")
    (workdir / "-dash.txt").write_text("d\n")
    return workdir


def subjects(text: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in text.splitlines()]


@needs("git")
def test_git_status(real_library: LibraryRunner, repo: Path) -> None:
    result = real_library("git_status")
    assert result.ok, result.content
    assert result.content.splitlines() == ["## main", " M f0.txt", "?? -dash.txt"]
    assert real_library("git_status", untracked="no").content.splitlines() == ["## main", " M f0.txt"]
    assert real_library("git_status", paths=["-dash.txt"]).content.splitlines() == ["## main", "?? -dash.txt"]


@needs("git")
def test_git_reads_the_configuration_its_tools_declare_in_the_hidden_home(
        real_library: LibraryRunner, repo: Path, temp_home: Path) -> None:
    """Issue 40, item 3: the home folder is hidden; git's tools declare ~/.gitconfig and ~/.config/git, so
    git still finds its excludes there (and ~/.config/git/credentials stays hidden)."""
    need_bwrap()
    (temp_home / ".config" / "git").mkdir(parents=True)
    (temp_home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/.config/git/more-ignores\n")
    (temp_home / ".config" / "git" / "more-ignores").write_text("-dash.txt\n")
    (temp_home / ".config" / "git" / "ignore").write_text("side.txt\n")
    assert real_library("git_status").content.splitlines() == ["## main", " M f0.txt"]
    (temp_home / ".gitconfig").unlink()  # the default excludes file, ~/.config/git/ignore, is read too
    assert real_library("git_status").content.splitlines() == ["## main", " M f0.txt", "?? -dash.txt"]


@needs("kubectl")
def test_kubectl_reads_the_kubeconfig_its_tools_declare(real_library: LibraryRunner, temp_home: Path) -> None:
    need_bwrap()
    (temp_home / ".kube").mkdir()
    (temp_home / ".kube" / "config").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: here\nclusters: [{name: c, cluster: {server: "
        "'https://127.0.0.1:9'}}]\ncontexts: [{name: here, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n")
    result = real_library("kubectl_get", kind="pods")
    assert "127.0.0.1:9" in result.content, result.content  # the server its kubeconfig names, not localhost:8080


@needs("git")
def test_git_log_filters(real_library: LibraryRunner, repo: Path) -> None:
    assert subjects(real_library("git_log").content) == ["commit 2", "commit 1", "commit 0"]
    assert subjects(real_library("git_log", author="Bob").content) == ["commit 1"]
    assert subjects(real_library("git_log", paths=["f0.txt", "f2.txt"]).content) == ["commit 2", "commit 0"]
    assert sorted(subjects(real_library("git_log", all=True).content)) == ["commit 0", "commit 1", "commit 2",
                                                                          "side work"]
    assert len(subjects(real_library("git_log", all=True, max_count=2).content)) == 2
    assert subjects(real_library("git_log", revision="main..release/1").content) == ["side work"]
    assert subjects(real_library("git_log", grep="^commit [02]$").content) == ["commit 2", "commit 0"]
    assert len(subjects(real_library("git_log", since="2 days ago").content)) == 3
    assert real_library("git_log", until="2001-01-01").content == "(no output)"


@needs("git")
def test_a_folder_laid_out_as_a_git_directory_runs_none_of_its_config(real_library: LibraryRunner,
                                                                       workdir: Path) -> None:
    """Fifth review: a downloaded folder (no .git of its own) whose files are a git directory (HEAD,
    objects/, refs/, a config with core.worktree) is a repository to git, and `git status` ran its
    core.fsmonitor: a read tool ran the folder's code, trusted or not. nami's children open a bare
    repository only when told where it is (safe.bareRepository=explicit)."""
    subprocess.run(["git", "init", "-q", "--bare", "."], cwd=workdir, check=True)
    for key, value in (("core.bare", "false"), ("core.worktree", "."),
                       ("core.fsmonitor", "touch pwned; false"), ("log.showSignature", "true")):
        subprocess.run(["git", "config", key, value], cwd=workdir, check=True)
    status = real_library("git_status")
    real_library("git_log")
    assert not (workdir / "pwned").exists()
    assert not status.ok and "bare" in status.content


@needs("git")
def test_git_log_refuses_an_injected_option(real_library: LibraryRunner, repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "stolen"
    result = real_library("git_log", revision=f"--output={target}")
    assert not result.ok and "starts with '-'" in result.content
    assert not target.exists()


@needs("git")
def test_git_diff_show_blame_branch(real_library: LibraryRunner, repo: Path) -> None:
    diff = real_library("git_diff")
    assert diff.ok and "+changed" in diff.content
    assert real_library("git_diff", staged=True).content == "(no output)"
    between = real_library("git_diff", base="main", head="release/1", stat=True)
    assert "side.txt | 1 +" in between.content
    shown = real_library("git_show", revision="main~1:f1.txt")
    assert shown.content == "line 1"
    assert "commit 2" in real_library("git_show", stat=True).content
    blame = real_library("git_blame", path="f0.txt", lines="1,1", revision="HEAD")
    assert blame.ok and "Ann" in blame.content and "line 0" in blame.content
    branches = real_library("git_branch", patterns=["release/*"])
    assert [line.split()[0] for line in branches.content.splitlines()] == ["release/1"]
    contains = real_library("git_branch", contains="HEAD")
    assert {line.lstrip("* ").split()[0] for line in contains.content.splitlines()} == {"main", "release/1"}


# -- jq ---------------------------------------------------------------------------------------------

@needs("jq")
def test_jq_filter(real_library: LibraryRunner) -> None:
    data = {"items": [{"metadata": {"name": "web"}}, {"metadata": {"name": "db"}}]}
    result = real_library("jq_filter", filter=".items[].metadata.name", json=json.dumps(data), raw=True)
    assert result.ok and result.content.split() == ["web", "db"]
    assert real_library("jq_filter", filter="length", json="1 2 3", slurp=True).content.strip() == "3"
    assert real_library("jq_filter", filter=".", json='{"a": [1]}', compact=True).content.strip() == '{"a":[1]}'
    broken = real_library("jq_filter", filter=".[", json="{}")
    assert not broken.ok and "[exit code:" in broken.content
    # The filter is the model's program: jq's $ENV sees no host variable but PATH and the locale (issue 40,
    # item 10: a filter read $ENV.HOME).
    seen = json.loads(real_library("jq_filter", filter="$ENV | keys", json="null", compact=True).content)
    assert "PATH" in seen and not {"HOME", "USER", "XDG_CONFIG_HOME"} & set(seen), seen


# -- terraform --------------------------------------------------------------------------------------

@needs("terraform")
def test_terraform_fmt_validate_plan_apply(real_library: LibraryRunner, workdir: Path) -> None:
    infra = terraform_config(workdir)
    assert real_library("terraform_fmt", dir="infra").ok
    (infra / "ugly.tf").write_text('output "other" {\nvalue=1\n}\n')
    unformatted = real_library("terraform_fmt", dir="infra")
    assert not unformatted.ok and "ugly.tf" in unformatted.content and "+  value = 1" in unformatted.content
    (infra / "ugly.tf").unlink()
    validated = real_library("terraform_validate", dir="infra")
    assert validated.ok and "The configuration is valid" in validated.content
    plan = real_library("terraform_plan", dir="infra", var_files=["prod.tfvars"])
    assert plan.ok, plan.content
    assert "+ size = 5" in plan.content
    assert not (infra / "terraform.tfstate").exists()  # a plan changes nothing
    applied = real_library("terraform_apply", dir="infra", var_files=["prod.tfvars"])
    assert applied.ok, applied.content
    assert "size = 5" in applied.content
    assert json.loads((infra / "terraform.tfstate").read_text())["outputs"]["size"]["value"] == 5


# -- curl -------------------------------------------------------------------------------------------

class _Handler(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if self.path == "/old":
            self.reply(301, b"", {"Location": "/health"})
            return
        body = json.dumps({"probe": self.headers.get("X-Probe")}).encode()
        self.reply(200 if self.path == "/health" else 404, body, {"Content-Type": "application/json"})


@pytest.fixture
def web() -> Iterator[str]:
    with serving(_Handler) as url:
        yield url


@needs("curl")
def test_http_probe(real_library: LibraryRunner, web: str) -> None:
    result = real_library("http_probe", url=f"{web}/health", headers=["X-Probe: nami"])
    assert result.ok, result.content
    lines = result.content.splitlines()
    assert lines[0].startswith("HTTP/1.") and lines[0].split()[1] == "200"
    assert "Content-Type: application/json" in lines
    assert "status: 200" in lines
    assert any(line.startswith("time_total: ") and line.endswith("s") for line in lines)
    assert '"probe"' not in result.content  # the body is not shown
    assert "status: 404" in real_library("http_probe", url=f"{web}/missing").content
    assert "status: 301" in real_library("http_probe", url=f"{web}/old").content
    followed = real_library("http_probe", url=f"{web}/old", follow_redirects=True).content
    assert "status: 200" in followed and "redirects: 1" in followed


# -- df, du, ps -------------------------------------------------------------------------------------

def test_system_tools(real_library: LibraryRunner, workdir: Path) -> None:
    free = real_library("system_disk_free", paths=["."])
    assert free.ok, free.content
    assert free.content.splitlines()[0].split()[:2] == ["Filesystem", "Type"]
    (workdir / "big").mkdir()
    (workdir / "big" / "blob").write_bytes(b"x" * 300_000)
    (workdir / "small.txt").write_text("hi")
    usage = real_library("system_disk_usage", top=2)
    assert usage.ok, usage.content
    assert [line.split()[-1] for line in usage.content.splitlines()] == [".", "./big"]
    processes = real_library("system_processes", sort="mem", top=3)
    assert processes.ok, processes.content
    header, *rows = processes.content.splitlines()
    assert header.split()[:4] == ["PID", "USER", "%CPU", "%MEM"] and len(rows) == 3
    memory = [float(row.split()[3]) for row in rows]
    assert memory == sorted(memory, reverse=True)


# -- the CLIs this machine cannot really use: they must at least accept every command -----------------

PARSE_ERRORS = ("unknown flag", "unknown shorthand flag", "unknown command", "unrecognized option",
                "invalid option", "flag needs an argument", "requires an argument", "flag provided but not defined",
                "accepts at most", "accepts between", "Usage:", "See '")
PARSED_ONLY = [case for case in CASES if case[0].split("_")[0] in ("kubectl", "docker", "systemd", "helm")]


def _program(tool: str) -> str:
    return {"systemd_status": "systemctl", "systemd_journal": "journalctl"}.get(tool) or tool.split("_")[0]


@pytest.fixture
def unreachable_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts:\n" + "".join(f"- {{name: {name}, context: {{cluster: c, user: u}}}}\n"
                               for name in ("prod", "prod-eu", "staging")))
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")


@pytest.mark.parametrize(("tool", "arguments", "expected"), PARSED_ONLY,
                         ids=[f"{c[0]}-{len(c[1])}args" for c in PARSED_ONLY])
def test_the_real_cli_accepts_the_command(unreachable_cluster: None, workdir: Path, temp_home: Path, tool: str,
                                          arguments: dict[str, Any], expected: list[str]) -> None:
    program = _program(tool)
    need(program)
    library = LibraryRunner(RuntimeContext(workspace=workdir, host_env=dict(os.environ),
                                           spill_dir=temp_home / "spill"))
    result = library(tool, **arguments)
    found = [marker for marker in PARSE_ERRORS if marker in result.content]
    assert found == [], result.content
    if program == "kubectl" and not tool.endswith(("apply", "diff")):
        assert "refused" in result.content, result.content  # it parsed the command, then tried the cluster


def _library_tools_with_docs() -> list[tuple[str, Path]]:
    from nami_yaml.registry.library import library_groups

    return [(f"{group}/{file.stem}", file) for group, files in library_groups().items() for file in files]


@pytest.mark.parametrize(("selector", "file"), _library_tools_with_docs(), ids=[s for s, _ in _library_tools_with_docs()])
def test_every_library_tool_has_docs_the_real_cli_prints(selector: str, file: Path, workdir: Path,
                                                         temp_home: Path) -> None:
    """``docs:`` is the CLI's own help: run through the tool_docs built-in, it gives usage text."""
    from nami_yaml.builtins.ondemand import tool_docs
    from nami_yaml.registry.loader import load_tools

    [tool], problems = load_tools([file])
    assert problems == [] and tool.docs is not None and tool.docs.command, selector
    need(tool.docs.command[0])
    ctx = RuntimeContext(workspace=workdir, host_env=dict(os.environ), spill_dir=temp_home / "spill",
                         tool_docs={tool.name: tool.docs})
    result = tool_docs(tool.name, ctx=ctx)
    assert result.ok, result.content
    assert "usage" in result.content.lower() or "options" in result.content.lower(), result.content[:300]
