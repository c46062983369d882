"""A project's telemetry: is a destination for your runs: read only from a trusted agent.yaml, and shown in
the trust summary (app/tracing.py, app/trust_summary.py)."""

from __future__ import annotations

from pathlib import Path

from nami_yaml.app import ProjectRequest, open_project
from nami_yaml.app.tracing import trusted_telemetry
from tests.helpers import nami, write

COLLECTOR = "https://collector.example.com:4318"


def test_an_untrusted_projects_telemetry_is_not_read_and_trust_shows_where_runs_would_go(workdir: Path) -> None:
    write(workdir / "agent.yaml", f"telemetry: {{endpoint: '{COLLECTOR}', content: true}}\n")
    project = open_project(ProjectRequest(cwd=workdir))
    assert project.is_trusted() is False
    assert trusted_telemetry(project).endpoint is None and trusted_telemetry(project).content is False
    assert project.settings.telemetry.endpoint == COLLECTOR  # what the file says, not what is used

    shown = nami("trust", "--yes")
    assert shown.exit_code == 0, shown.output
    assert f'sets telemetry.endpoint = "{COLLECTOR}"' in shown.output
    assert f"sends a trace of every run (with prompts, arguments and output) to {COLLECTOR}/v1/traces" in shown.output
    trusted = open_project(ProjectRequest(cwd=workdir))
    assert trusted.is_trusted() and trusted_telemetry(trusted).endpoint == COLLECTOR


def test_the_users_own_config_needs_no_trust(workdir: Path, temp_home: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml", f"telemetry: {{endpoint: '{COLLECTOR}'}}\n")
    write(workdir / "agent.yaml", "limits: {max_steps: 3}\n")
    project = open_project(ProjectRequest(cwd=workdir))
    assert project.is_trusted() is False and trusted_telemetry(project).endpoint == COLLECTOR
