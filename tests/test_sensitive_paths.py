"""Where a write is code execution: the pure decision, and what a model's path may resolve to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nami_yaml.sensitive_paths import ProtectedPaths, sensitive_reason, write_reason

CONFIGURED = ProtectedPaths.build(
    files=[("/p/agent.yaml", "config"), ("/p/prompts/system.md", "prompt")],
    folders=[("/p/tools", "tool folder"), ("/home/u/.local/state/nami", "state")],
)


@pytest.mark.parametrize("path, why", [
    ("/p/agent.yaml", "config"), ("/p/prompts/system.md", "prompt"),
    ("/p/tools/mod.py", "tool folder"), ("/p/tools/sub/deep/x.py", "tool folder"), ("/p/tools", "tool folder"),
    ("/home/u/.local/state/nami/trusted.json", "state"),
    ("/p/.git/config", ".git"), ("/p/.git/hooks/pre-commit", ".git"), ("/p/sub/module/.git/config", ".git"),
    ("/p/.GIT/config", ".git"), ("/p/.Git/HEAD", ".git"), ("/p/.git", ".git"),
    ("/p/.envrc", "direnv"), ("/p/Makefile", "make"), ("/p/src/makefile", "make"), ("/p/GNUmakefile", "make"),
    ("/p/.vscode/tasks.json", ".vscode"), ("/p/.vscode/settings.json", ".vscode"), ("/p/.idea/workspace.xml", ".idea"),
    ("/p/.devcontainer/devcontainer.json", ".devcontainer"), ("/p/.pre-commit-config.yaml", "pre-commit"),
    ("/p/.venv/lib/python3.11/site-packages/evil.pth", ".venv"), ("/opt/x/site-packages/yaml/__init__.py", "site-packages"),
    ("/p/lib/hook.pth", ".pth"), ("/p/sitecustomize.py", "sitecustomize"), ("/p/node_modules/x/index.js", "node_modules"),
    ("/home/u/.bashrc", "start-up"), ("/home/u/.gitconfig", "git"), ("/p/.hg/hgrc", "Mercurial"),
])
def test_sensitive_paths(path: str, why: str) -> None:
    reason = sensitive_reason(path, CONFIGURED)
    assert reason is not None and why.casefold() in reason.casefold(), reason


@pytest.mark.parametrize("path", [
    "/p/src/app.py", "/p/docs/git.md", "/p/agent.yaml.bak", "/p/tools-old/x.py", "/p/toolsx", "/p/README.md",
    "/p/.github/workflows/ci.yml", "/p/makefile.md", "/p/my.git/x", "/p/.gitignore", "/p/.env",
])
def test_ordinary_paths(path: str) -> None:
    assert sensitive_reason(path, CONFIGURED) is None


def test_default_protection_knows_no_configuration() -> None:
    assert sensitive_reason("/p/tools/mod.py", ProtectedPaths()) is None
    assert sensitive_reason("/p/.git/config", ProtectedPaths()) is not None


def test_a_path_is_judged_as_written_and_as_resolved(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / "docs").mkdir()
    os.symlink(workspace / ".git", workspace / "docs" / "notes")  # a harmless-looking name
    os.symlink(workspace / ".git" / "config", workspace / "cfg.txt")
    assert write_reason(workspace, "docs/notes/config", ProtectedPaths()) is not None
    assert write_reason(workspace, "cfg.txt", ProtectedPaths()) is not None
    assert write_reason(workspace, "docs/../.git/config", ProtectedPaths()) is not None
    assert write_reason(workspace, str(workspace / ".git" / "hooks" / "post-checkout"), ProtectedPaths()) is not None
    assert write_reason(workspace, "docs/readme.md", ProtectedPaths()) is None
    elsewhere = tmp_path / "real-git"
    elsewhere.mkdir()
    os.symlink(elsewhere, workspace / "sub.git-link")
    (workspace / "w").mkdir()
    os.symlink(elsewhere, workspace / "w" / ".git")  # a .git that is itself a link still counts
    assert write_reason(workspace, "w/.git/config", ProtectedPaths()) is not None
