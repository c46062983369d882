"""``nami log``: the audit log, readable (one line per call, grouped by session) or as JSON lines."""

from __future__ import annotations

from collections import deque
from datetime import datetime
from pathlib import Path

import click

from nami_yaml.cli.common import EXIT_USAGE, config_option, fail, handle_errors, settings
from nami_yaml.display import plural, visible, visible_json
from nami_yaml.policy.audit import configured_path
from nami_yaml.policy.audit_read import LogFilter, format_record, parse_when, read_log, session_header


def _when(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_when(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("log")
@click.option("--tool", metavar="NAME", help="Only calls of this tool (a glob: kubectl_*).")
@click.option("--session", metavar="ID", help="Only this session (an id or its beginning).")
@click.option("--decision", type=click.Choice(["allow", "deny"]), help="Only calls allowed, or only refused.")
@click.option("--by", metavar="TEXT", help="Only decisions whose source contains TEXT (rule, user, --yes, agent.yaml:14).")
@click.option("--since", metavar="WHEN", callback=_when, help="From this time: 30m, 2h, 7d ago, or 2025-01-31[T14:00].")
@click.option("--until", metavar="WHEN", callback=_when, help="Up to this time (same forms).")
@click.option("--last", "-n", type=click.IntRange(min=1), metavar="N", help="Only the last N matching calls.")
@click.option("--workspace", "-w", metavar="FOLDER", type=click.Path(file_okay=False, path_type=Path),
              help="Only calls in this workspace (default: this project's, unless --session names one).")
@click.option("--all", "all_workspaces", is_flag=True, help="Calls in every workspace.")
@click.option("--json", "as_json", is_flag=True, help="The matching lines exactly as written.")
@click.option("--path", "log_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Read this log instead of the configured one (audit.path).")
@config_option
@handle_errors
def log(tool: str | None, session: str | None, decision: str | None, by: str | None, since: datetime | None,
        until: datetime | None, last: int | None, workspace: Path | None, all_workspaces: bool, as_json: bool,
        log_path: Path | None, config: str | None) -> None:
    """Show the audit log: each tool call, who decided it, what it did. The log is one per user; it shows
    the calls in this project's workspace (the folder of the agent.yaml found here, else this folder)
    unless --workspace names another, --all asks for every one, or --session names a session."""
    if workspace is not None and all_workspaces:
        raise click.UsageError("give --workspace or --all, not both")
    effective = settings(config)
    path = log_path or configured_path(effective.get("audit.path"))
    if not path.exists():
        fail(f"nami: no audit log at {path} yet", EXIT_USAGE if log_path else 0)
    here = None if all_workspaces or (session and workspace is None) else \
        str((workspace or Path(effective.get("workspace") or Path.cwd())).resolve())
    wanted = LogFilter(tool=tool, session=session, decision=decision, by=by, since=since, until=until, workspace=here)
    broken: list[int] = []
    shown: deque = deque(maxlen=last)
    elsewhere = 0  # calls that match but were made in another workspace
    try:
        for line in read_log(path):
            if line.record is None:
                broken.append(line.number)
            elif wanted.matches_all_but_workspace(line.record):
                if wanted.in_workspace(line.record):
                    shown.append(line)
                else:
                    elsewhere += 1
    except OSError as exc:
        fail(f"nami: cannot read {path}: {exc.strerror or exc}", 1)
    current = None
    for line in shown:
        assert line.record is not None
        if as_json:
            click.echo(visible_json(line.text))  # the log may hold lines nami did not write
            continue
        if line.record.get("session") != current:
            current = line.record.get("session")
            click.echo(visible(f"── {session_header(line.record)}"))
        click.echo(visible(format_record(line.record)))
    if elsewhere:
        click.echo(f"nami: {plural(elsewhere, 'more call')} in other workspaces than {here} (--all shows them)",
                   err=True)
    if broken:
        where = ", ".join(map(str, broken[:10])) + ("…" if len(broken) > 10 else "")
        many = len(broken) != 1
        click.echo(f"nami: skipped {len(broken)} line{'s that are' if many else ' that is'} not JSON "
                   f"(line{'s' if many else ''} {where} of {path})", err=True)
