"""``nami sessions``: list, show and export the saved conversations."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import click

from nami_yaml.cli.common import handle_errors
from nami_yaml.cli.completion import complete_session_ids
from nami_yaml.display import safe_json, visible, visible_line
from nami_yaml.errors import NamiError
from nami_yaml.session.export import export_html
from nami_yaml.session.loader import LoadedSession, SessionSummary, load_session, summarize
from nami_yaml.session.show import format_cost, session_lines
from nami_yaml.session.store import SessionStore


def _one_line(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _home_relative(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + "/")) else path


def _summaries(store: SessionStore, here: bool) -> list[SessionSummary]:
    workspace = str(Path.cwd().resolve())
    found = []
    for path, header in store.by_recent_use():
        if here and header.get("workspace") != workspace:
            continue
        try:
            found.append(summarize(path))
        except NamiError:
            continue  # a damaged file is reported by `show`, not allowed to hide the others
    return found


@click.group("sessions", invoke_without_command=True)
@click.option("--here", is_flag=True, help="Only sessions of the current folder's workspace.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True, help="How many to list.")
@click.option("--json", "as_json", is_flag=True, help="One JSON array, newest first.")
@click.pass_context
@handle_errors
def sessions_group(context: click.Context, here: bool, limit: int, as_json: bool) -> None:
    """List, show and export saved sessions (newest first). Every `nami run` and `nami chat` is saved;
    continue one with `nami run --continue` or `nami chat --resume [ID]`."""
    if context.invoked_subcommand is not None:
        return
    store = SessionStore()
    rows = _summaries(store, here)[:limit]
    if as_json:
        click.echo(json.dumps([{"id": s.id, "created": s.created, "workspace": s.workspace, "model": s.model,
                                "first_task": s.first_task, "runs": s.runs, **s.totals.to_json()} for s in rows],
                              indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo(f"no sessions{' in this workspace' if here else ''} yet ({store.folder})", err=True)
        return
    # The session's Totals, the figures chat's /cost and the runs' totals lines give: tokens in and out.
    click.echo(f"{'ID':<22}  {'LAST USED':<16}  {'STEPS':>5}  {'IN':>10}  {'OUT':>8}  {'COST':>8}  "
               "WORKSPACE / FIRST TASK")
    for s in rows:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated))
        mark = "~" if s.totals.estimated_requests else ""
        cost = "-" if s.totals.known_cost is None else format_cost(s.totals.known_cost)
        tokens_in, tokens_out = mark + format(s.totals.prompt_tokens, ","), mark + format(s.totals.completion_tokens, ",")
        line = (f"{s.id:<22}  {used:<16}  {s.totals.steps:>5}  {tokens_in:>10}  {tokens_out:>8}  {cost:>8}  "
                f"{_home_relative(s.workspace)}: {_one_line(s.first_task, 60)}")
        click.echo(visible_line(line))  # one row per session, whatever its workspace's name holds


@sessions_group.command("show")
@click.argument("session_id", metavar="ID", shell_complete=complete_session_ids)
@handle_errors
def show(session_id: str) -> None:
    """Print session ID (or a unique start of it) readably: messages, tool calls, results, usage."""
    store = SessionStore()
    session = load_session(store.find(session_id))
    for line in session_lines(session, children_of(store)):
        click.echo(visible(line))


@sessions_group.command("export")
@click.argument("session_id", metavar="ID", shell_complete=complete_session_ids)
@click.option("--html", "html_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write one self-contained HTML page (loads nothing from the network).")
@click.option("--timeline", is_flag=True,
              help="An incident timeline: steps with times, calls with target, decision and who decided, "
                   "approvals, sub-agents nested, the answer (Markdown on stdout, or --html FILE, or --json).")
@click.option("--json", "as_json", is_flag=True, help="With --timeline: the timeline as JSON.")
@handle_errors
def export(session_id: str, html_file: str | None, timeline: bool, as_json: bool) -> None:
    """Export session ID for sharing: the conversation, with tool calls and results collapsed; or, with
    --timeline, what happened when, joined with the audit log's decisions."""
    if not timeline and (html_file is None or as_json):
        raise click.UsageError("give --html FILE (or --timeline)" if not as_json else "--json goes with --timeline")
    if as_json and html_file is not None:
        raise click.UsageError("give --json or --html FILE, not both")
    store = SessionStore()
    session = load_session(store.find(session_id))
    if timeline:
        export_timeline(session, children_of(store), html_file, as_json)
        return
    assert html_file is not None
    try:
        export_html(session, Path(html_file), children_of(store))
    except OSError as exc:
        raise NamiError(f"cannot write {html_file}: {exc.strerror or exc}") from None
    click.echo(f"wrote {html_file}", err=True)


def export_timeline(session: LoadedSession, children: Callable[[str], LoadedSession | None],
                    html_file: str | None, as_json: bool) -> None:
    from nami_yaml.config.settings import load_settings
    from nami_yaml.policy.audit_read import read_log, readable_path
    from nami_yaml.project_request import ProjectRequest
    from nami_yaml.session.export import write_private
    from nami_yaml.session.timeline import (
        audit_index,
        build_timeline,
        session_ids,
        timeline_html,
        timeline_markdown,
    )

    path, note = readable_path(load_settings(ProjectRequest()))
    if note:
        click.echo(visible_line(note), err=True)
    wanted = session_ids(session, children)
    try:
        records = [line.record for line in read_log(path) if line.record is not None] if path.exists() else []
    except OSError as exc:
        raise NamiError(f"cannot read the audit log {path}: {exc.strerror or exc}") from None
    if not records:
        click.echo(f"nami: no audit log at {visible_line(str(path))}: decisions are not shown", err=True)
    built = build_timeline(session, audit_index(records, wanted), children)
    if as_json:
        click.echo(safe_json(built, indent=2))
    elif html_file is not None:
        try:
            write_private(Path(html_file), timeline_html(built))
        except OSError as exc:
            raise NamiError(f"cannot write {html_file}: {exc.strerror or exc}") from None
        click.echo(f"wrote {html_file}", err=True)
    else:
        click.echo(timeline_markdown(built), nl=False)


def children_of(store: SessionStore) -> Callable[[str], LoadedSession | None]:
    """Sub-agents' sessions by id, for showing them nested; one that is gone is shown as a name only."""

    def find(session_id: str) -> LoadedSession | None:
        try:
            return load_session(store.find(session_id))
        except (NamiError, OSError, ValueError):
            return None

    return find
