"""``nami log``: the audit log, readable (one line per call, grouped by session) or as JSON lines."""

from __future__ import annotations

from collections import deque
from datetime import datetime
from pathlib import Path

import click

from nami_yaml.cli.common import EXIT_USAGE, config_option, fail, handle_errors
from nami_yaml.config.settings import load_settings
from nami_yaml.display import plural, safe_json, visible_json, visible_line
from nami_yaml.policy.audit import REDACTED
from nami_yaml.policy.audit_read import (
    LogFilter,
    LogLine,
    describe,
    format_record,
    local_time,
    parse_when,
    read_log,
    readable_path,
    session_header,
    tool_on_target,
)
from nami_yaml.policy.replay import Replayed
from nami_yaml.project_request import ProjectRequest


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
@click.option("--target", metavar="NAME", help="Only calls on this target (agent.yaml targets:).")
@click.option("--by", metavar="TEXT", help="Only decisions whose source contains TEXT (rule, user, --yes, agent.yaml:14).")
@click.option("--since", metavar="WHEN", callback=_when, help="From this time: 30m, 2h, 7d ago, or 2025-01-31[T14:00].")
@click.option("--until", metavar="WHEN", callback=_when, help="Up to this time (same forms).")
@click.option("--last", "-n", type=click.IntRange(min=1), metavar="N", help="Only the last N matching calls.")
@click.option("--workspace", "-w", metavar="FOLDER", type=click.Path(file_okay=False, path_type=Path),
              help="Only calls in this workspace (default: this project's, unless --session names one).")
@click.option("--all", "all_workspaces", is_flag=True, help="Calls in every workspace.")
@click.option("--json", "as_json", is_flag=True, help="The matching lines exactly as written (with --replay: each change as JSON).")
@click.option("--replay", is_flag=True,
              help="Decide the matching calls again under this configuration (or --config's) and list each whose "
                   "decision would change.")
@click.option("--path", "log_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Read this log instead of the configured one (audit.path).")
@config_option
@handle_errors
def log(tool: str | None, session: str | None, decision: str | None, target: str | None, by: str | None,
        since: datetime | None, until: datetime | None, last: int | None, workspace: Path | None,
        all_workspaces: bool, as_json: bool, replay: bool, log_path: Path | None, config: str | None) -> None:
    """Show the audit log: each tool call, who decided it, what it did. The log is one per user; it shows
    the calls in this project's workspace (the folder of the agent.yaml found here, else this folder)
    unless --workspace names another, --all asks for every one, or --session names a session.

    With --replay, the calls shown are decided again under the current configuration (or --config
    OTHER.yaml) and each whose decision would change is listed: was → would be, and the rule. Nothing is
    run or asked.
    """
    if workspace is not None and all_workspaces:
        raise click.UsageError("give --workspace or --all, not both")
    effective = load_settings(ProjectRequest(config=config))
    path = log_path
    if path is None:
        path, note = readable_path(effective)
        if note:
            click.echo(visible_line(note), err=True)
    try:
        present = path.exists()
    except OSError as exc:  # a name too long for the system, say
        fail(f"nami: cannot read {visible_line(str(path))}: {exc.strerror or exc}", EXIT_USAGE)
    if not present:
        fail(f"nami: no audit log at {visible_line(str(path))} yet", EXIT_USAGE if log_path else 0)
    here = None if all_workspaces or (session and workspace is None) else \
        str((workspace or Path(effective.get("workspace") or Path.cwd())).resolve())
    wanted = LogFilter(tool=tool, session=session, decision=decision, by=by, target=target, since=since,
                       until=until, workspace=here)
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
        fail(f"nami: cannot read {visible_line(str(path))}: {exc.strerror or exc}", 1)
    if replay:
        show_replay(config, list(shown), as_json)
        _report_broken(broken, path)
        return
    current = None
    for line in shown:
        assert line.record is not None
        if as_json:
            click.echo(visible_json(line.text))  # the log may hold lines nami did not write
            continue
        if line.record.get("session") != current:
            current = line.record.get("session")
            click.echo(visible_line(f"── {session_header(line.record)}"))
        # One screen line per record, whatever its fields hold (a newline would print a fake record).
        click.echo(visible_line(format_record(line.record)))
    if elsewhere:
        click.echo(f"nami: {plural(elsewhere, 'more call')} in other workspaces than {here} (--all shows them)",
                   err=True)
    _report_broken(broken, path)


def _report_broken(broken: list[int], path: Path) -> None:
    if broken:
        where = ", ".join(map(str, broken[:10])) + ("…" if len(broken) > 10 else "")
        many = len(broken) != 1
        click.echo(f"nami: skipped {len(broken)} line{'s that are' if many else ' that is'} not JSON "
                   f"(line{'s' if many else ''} {where} of {path})", err=True)


def show_replay(config: str | None, lines: list[LogLine], as_json: bool) -> None:
    from nami_yaml.app.policy_check import hooks_not_run, open_for_deciding, replay_log

    with open_for_deciding(config) as project:
        report = replay_log(project, lines)
        hooks_note = hooks_not_run(project)
        where = project.settings.config_path or "no agent.yaml (the defaults)"
        workspace = project.context.workspace
    for change in report.changes:
        click.echo(visible_json(safe_json(replay_entry(change))) if as_json else visible_line(replay_line(change)))
    count = len(report.replayed)
    notes = [f"{len(report.changes)} of {count} call{'s' if count != 1 else ''} of {workspace} would be decided "
             f"differently under {where}"]
    if report.redacted:
        notes.append(f"{report.redacted} had redacted values (secret-looking parameters), decided with "
                     f"{REDACTED} in their place: not exact")
    if report.other_workspaces:
        notes.append(f"{report.other_workspaces} of other workspaces left out")
    if hooks_note:
        notes.append(hooks_note)
    click.echo("nami: " + "; ".join(notes), err=True)


def replay_line(change: Replayed) -> str:
    record = change.record
    was = change.was + (f" (by {change.was_by})" if change.was_by else "")
    if change.now is None:
        now = f"not valid: {change.invalid}"
    else:
        now = change.now.action + (f" by {change.now.source}" if change.now.source else "")
        now += f" ({change.now.reason})" if change.now.reason and change.now.action != "allow" else ""
    redacted = f"  [redacted values: decided with {REDACTED} in their place, not exact]" if change.redacted else ""
    return f"{local_time(record)}  {tool_on_target(record)}  {describe(record)}  was {was} → would be {now}{redacted}"


def replay_entry(change: Replayed) -> dict[str, object]:
    record, now = change.record, change.now
    return {"line": change.number, "time": record.get("time"), "session": record.get("session"),
            "tool": record.get("tool"), "target": record.get("target"), "arguments": record.get("arguments"),
            "was": change.was, "was_by": change.was_by, "would_be": now.action if now else None,
            "would_be_by": now.source if now else None, "reason": now.reason if now else None,
            "invalid": change.invalid, "redacted": change.redacted}
