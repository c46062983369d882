"""``approvals:``: typed, from a trusted agent.yaml or the user config, which may only tighten a project's;
listed when a person trusts the project."""

from __future__ import annotations

import os
from pathlib import Path

from nami_yaml.config.settings import load_settings
from nami_yaml.project_request import ProjectRequest
from tests.helpers import run_nami, write

HASH = "a" * 64


def settings_of(workdir: Path, project: str, user: str | None = None):  # type: ignore[no-untyped-def]
    if user is not None:
        write(Path(os.environ["XDG_CONFIG_HOME"]) / "nami" / "config.yaml", user)
    write(workdir / "agent.yaml", project)
    return load_settings(ProjectRequest(cwd=workdir))


def test_durations_and_approvers_are_typed(workdir: Path) -> None:
    settings = settings_of(workdir, f"approvals: {{via: queue, path: q, timeout: 2h, expires: 90s,"
                                    f" approvers: {{alice: {{token_sha256: {HASH}}}}}}}\n")
    approvals = settings.approvals
    assert (approvals.via, approvals.timeout, approvals.expires) == ("queue", 7200.0, 90.0)
    assert approvals.path == str(workdir / "q") and approvals.approvers == {"alice": HASH}


def test_the_user_config_may_only_tighten(workdir: Path) -> None:
    settings = settings_of(workdir, "approvals: {via: queue, timeout: 1h, expires: 30m,"
                                    " approvers: {mallory: {token_sha256: " + "b" * 64 + "}, alice: {token_sha256: "
                                    + "c" * 64 + "}}}\n",
                           user=f"approvals: {{timeout: 10m, expires: 1h, approvers: {{alice: {{token_sha256: {HASH}}}}}}}\n")
    approvals = settings.approvals
    assert approvals.timeout == 600.0  # the user's shorter wait
    assert approvals.expires == 1800.0  # the project's shorter expiry; the user's longer one does not loosen it
    assert approvals.approvers["alice"] == HASH  # the user's token for their own name


def test_the_trust_summary_lists_where_approvals_go_and_who_answers(workdir: Path) -> None:
    write(workdir / "agent.yaml", f"approvals: {{via: queue, path: /tmp/elsewhere, approvers: {{eve: {{token_sha256: {HASH}}}}}}}\n"
                                  "targets:\n  prod: {approvals: {required: 2}}\n")
    shown = run_nami(None, "trust", "--yes", cwd=workdir)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout + shown.stderr
    assert 'sets approvals.path = "/tmp/elsewhere"' in out and 'sets approvals.via = "queue"' in out
    assert "names approvers who may answer with a token or an SSH key: eve" in out
    assert "prod: (no env) (needs 2 approvers)" in out
