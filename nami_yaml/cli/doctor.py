"""``nami doctor``: one OK/WARN/FAIL line per check of this machine and project; exit 1 on a failure."""

from __future__ import annotations

import json

import click

from nami_yaml.cli.common import EXIT_ERROR, config_option, handle_errors
from nami_yaml.doctor import FAIL, WARN, run_doctor

LABELS = {"ok": "OK", "warn": "WARN", "fail": "FAIL"}


@click.command("doctor")
@config_option
@click.option("--live", is_flag=True, help="Also send one tiny request that must come back as a tool call (costs a few tokens).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds to wait for the endpoint.")
@click.option("--target", metavar="NAME", help="Also check this target of agent.yaml: its env (files named exist) and its tools' programs.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: ok, and every check (name, status, message, details).")
@handle_errors
def doctor(config: str | None, live: bool, timeout: float, target: str | None, as_json: bool) -> None:
    """Check that nami can run here: Python, agent.yaml (found, valid, trusted), the API key, the endpoint and
    the model, the programs the tools run, ripgrep, nami's folders; with --target, that target's env (the
    files it names exist) and the programs of the tools that run on it, without running any.

    Exits 1 when a check fails (warnings do not).
    """
    checks = run_doctor(config, live=live, timeout=timeout, target=target)
    failed = any(check.status == FAIL for check in checks)
    if as_json:
        click.echo(json.dumps({"ok": not failed, "checks": [c.as_dict() for c in checks]}, indent=2,
                              ensure_ascii=False))
    else:
        width = max(len(check.name) for check in checks)
        for check in checks:
            click.echo(f"{LABELS[check.status]:<4}  {check.name:<{width}}  {check.message}")
            for line in check.details:
                click.echo(f"{'':<4}  {'':<{width}}    {line}")
        failures = sum(c.status == FAIL for c in checks)
        warnings = sum(c.status == WARN for c in checks)
        summary = [f"{failures} failed" if failures else "", f"{warnings} warning{'s' if warnings != 1 else ''}"
                   if warnings else ""]
        click.echo(", ".join(s for s in summary if s) or "all good")
    if failed:
        raise SystemExit(EXIT_ERROR)
