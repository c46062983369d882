"""``nami approvals``: the pending approvals of the queue (``approvals.via: queue``) and their answers.

A person answers from any shell: the answer counts as the OS user who runs this command (and as the named
approver whose token ``$NAMI_APPROVER_TOKEN`` holds); ``$NAMI_APPROVER`` is only a label for the audit.
``--url`` answers through an approvals page (``nami approvals serve``) instead of a folder of this machine."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from nami_yaml.approvals.listing import age, approved_by
from nami_yaml.cli.common import config_option, handle_errors
from nami_yaml.display import safe_json, visible, visible_line

queue_option = click.option("--queue", metavar="FOLDER", type=click.Path(file_okay=False),
                            help="The queue folder (default: approvals.path, else nami's state folder).")
json_option = click.option("--json", "as_json", is_flag=True, help="JSON, redacted as the audit log is.")
url_option = click.option("--url", metavar="URL",
                          help="Answer through an approvals page (`nami approvals serve`), as the approver whose "
                               "token $NAMI_APPROVER_TOKEN holds (a page of this machine: its token in "
                               "$NAMI_PAGE_TOKEN or --token-file).")
token_file_option = click.option("--token-file", metavar="FILE",
                                 help="With --url: a file whose first line is the page's token (never the URL's "
                                      "?token=: command lines are seen by every user).")


def _lines(data: dict[str, Any], state: str, *, full: bool) -> list[str]:
    head = (f"{data.get('id')}  {age(data.get('created_unix'))} ago  {state}  "
            f"{data.get('agent') or 'nami'}: {data.get('risk')} tool {data.get('tool')}"
            + (f" on target {data.get('target')}" if data.get("target") is not None else ""))
    lines = [visible_line(head)]
    if "argv" in data:
        lines.append("  argv: " + visible_line(json.dumps(data["argv"], ensure_ascii=False)))
    else:
        lines.append("  arguments: " + visible_line(json.dumps(data.get("arguments"), ensure_ascii=False)))
    if data.get("cwd"):
        lines.append(f"  in {visible_line(str(data['cwd']))}")
    rule = data.get("rule") or "it needs a yes"
    lines.append("  asked by " + visible_line(str(rule)) + (f": {visible_line(data['reason'])}" if data.get("reason")
                                                         else ""))
    lines.append("  approved by " + visible_line(approved_by(data)))
    if data.get("plan") is not None:  # the plan step's output: what an approval approves (and binds)
        plan = visible(str(data["plan"]).rstrip("\n")).split("\n")
        digest = visible_line(str(data.get("plan_sha256")))
        if full:
            lines.append(f"  plan (sha256 {digest}):")
            lines.extend(f"  | {line}" for line in plan)
        else:
            lines.append(f"  plan: {len(plan)} line{'s' if len(plan) != 1 else ''}, sha256 {digest[:12]}… "
                         f"(nami approvals show {visible_line(str(data.get('id')))})")
    if full:
        details = data.get("details") or {}
        if details.get("env_set"):
            lines.append("  env: " + visible_line(" ".join(f"{k}={v}" for k, v in details["env_set"].items())))
        if details.get("stdin"):
            stdin = details["stdin"]
            lines.append(visible_line(f"  stdin: {stdin.get('bytes')} bytes, sha256 {stdin.get('sha256')}"))
        if details.get("sandbox"):
            lines.append("  sandbox: " + visible_line(json.dumps(details["sandbox"], ensure_ascii=False)))
        run = data.get("run") or {}
        lines.append(visible_line(f"  run: {run.get('user')}@{run.get('host')} pid {run.get('pid')}, "
                                  f"session {run.get('session')}, workspace {run.get('workspace')}"))
        lines.append(visible_line(f"  digest: {(data.get('binding') or {}).get('digest')}"))
        if data.get("outcome"):
            lines.append("  outcome: " + visible(str(data["outcome"])))
    if state == "pending":
        answer = data.get("answer") or {}
        lines.append(visible_line(f"  answer: {answer.get('approve')}  |  {answer.get('deny')}"))
    return lines


@click.group("approvals", invoke_without_command=True)
@config_option
@queue_option
@url_option
@token_file_option
@json_option
@click.option("--all", "show_all", is_flag=True, help="Also those answered, withdrawn or timed out.")
@click.pass_context
@handle_errors
def approvals_group(ctx: click.Context, config: str | None, queue: str | None, url: str | None,
                    token_file: str | None, as_json: bool, show_all: bool) -> None:
    """List the approvals waiting in the queue: id, age, agent, tool, target, the exact argv or arguments,
    the rule that asks, who has approved so far. Answer with `nami approvals approve|deny ID`, or from a
    web page: `nami approvals serve`."""
    ctx.ensure_object(dict)
    ctx.obj.update(config=config, queue=queue, url=url, token_file=token_file)
    if ctx.invoked_subcommand is not None:
        return
    if url:
        shown = _page(ctx, url).entries(show_all=show_all)
    else:
        from nami_yaml.approvals.listing import entries

        shown = entries(_folder(ctx), show_all=show_all)
    if as_json:
        click.echo(safe_json(shown, indent=2))
        return
    if not shown:
        click.echo(f"no approvals waiting in {url or _folder(ctx).path}", err=True)
        return
    for item in shown:
        click.echo("\n".join(_lines(_as_stored(item), item["state"], full=False)))


def _as_stored(item: dict[str, Any]) -> dict[str, Any]:
    """An entry as shown (listing.entry) back in the queue file's shape the lines below read."""
    return {**item, "details": item.get("plan_details")}


def _page(ctx: click.Context, url: str, token_file: str | None = None) -> Any:
    from nami_yaml.approvals.remote import PageClient

    return PageClient.of(url, os.environ, token_file or (ctx.find_object(dict) or {}).get("token_file"))


def _url(ctx: click.Context, url: str | None) -> str | None:
    return url or (ctx.find_object(dict) or {}).get("url")


def _folder(ctx: click.Context) -> Any:
    from nami_yaml.app.approval_route import queue_of

    options = ctx.find_object(dict) or {}
    return queue_of(options.get("config"), options.get("queue"))


@approvals_group.command("show")
@click.argument("approval_id", metavar="ID")
@url_option
@token_file_option
@json_option
@click.pass_context
@handle_errors
def show(ctx: click.Context, approval_id: str, url: str | None, token_file: str | None, as_json: bool) -> None:
    """Everything about one approval: what would run, where, with which environment and sandbox, who asks,
    who answered, the digest it binds."""
    if url := _url(ctx, url):
        item = _page(ctx, url, token_file).entry(approval_id)
    else:
        from nami_yaml.approvals.answering import find
        from nami_yaml.approvals.listing import shown

        item = shown(find(_folder(ctx), approval_id))
    if as_json:
        click.echo(safe_json(item, indent=2))
        return
    click.echo("\n".join(_lines(_as_stored(item), item["state"], full=True)))


def _answer(ctx: click.Context, approval_id: str, url: str | None, token_file: str | None, *, approve: bool,
            reason: str | None) -> None:
    if url := _url(ctx, url):
        message = _page(ctx, url, token_file).answer(approval_id, approve=approve, reason=reason)
    else:
        from nami_yaml.approvals.answering import give

        message = give(_folder(ctx), approval_id, approve=approve, reason=reason).message
    click.echo(visible_line(f"{approval_id}: {message}"))


@approvals_group.command("approve")
@click.argument("approval_id", metavar="ID")
@click.option("--reason", metavar="TEXT", help="Why (recorded in the audit log).")
@url_option
@token_file_option
@click.pass_context
@handle_errors
def approve(ctx: click.Context, approval_id: str, reason: str | None, url: str | None,
            token_file: str | None) -> None:
    """Approve a pending call, as the OS user running this (and the approver of $NAMI_APPROVER_TOKEN).
    Exit 2: unknown id, answered already, withdrawn, or answered by you already."""
    _answer(ctx, approval_id, url, token_file, approve=True, reason=reason)


@approvals_group.command("deny")
@click.argument("approval_id", metavar="ID")
@click.option("--reason", metavar="TEXT", required=True, help="Why not: the model is told.")
@url_option
@token_file_option
@click.pass_context
@handle_errors
def deny(ctx: click.Context, approval_id: str, reason: str, url: str | None, token_file: str | None) -> None:
    """Refuse a pending call; the reason goes to the model. Any deny wins over any approval."""
    _answer(ctx, approval_id, url, token_file, approve=False, reason=reason)


@approvals_group.command("serve")
@click.option("--listen", default="127.0.0.1:8717", show_default=True, metavar="HOST:PORT",
              help="Where to serve the page (port 0: any free port).")
@click.option("--allow-remote", is_flag=True,
              help="Serve beyond loopback, for a team behind a TLS proxy: each answer then needs a named "
                   "approver's token (approvals.approvers).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Another name the page is reached by (the proxy's), accepted in Host and Origin.")
@click.pass_context
@handle_errors
def serve(ctx: click.Context, listen: str, allow_remote: bool, allow_hosts: tuple[str, ...]) -> None:
    """A web page listing the pending approvals, to approve or deny them from a browser. On 127.0.0.1 its
    answers count as the OS user who started it; open the URL it prints (it holds a token made for this
    start). With --allow-remote every answer needs a named approver's token."""
    from nami_yaml.app.approval_route import approval_settings
    from nami_yaml.approvals.store import QueueFolder
    from nami_yaml.serve.approvals_page import serve_page
    from nami_yaml.serve.hosts import is_loopback

    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise click.BadParameter(f"{listen!r}: give HOST:PORT, e.g. 127.0.0.1:8717", param_hint="--listen")
    options = ctx.find_object(dict) or {}
    settings = approval_settings(options.get("config"))
    if allow_remote and not any(settings.approvers.values()):
        raise click.BadParameter("--allow-remote needs named approvers with tokens (approvals.approvers: their "
                                 "tokens' SHA-256 in your user config or a trusted agent.yaml): a page beyond this "
                                 "machine never answers as the OS user who started it", param_hint="--allow-remote")
    if not is_loopback(host.strip("[]")) and not allow_remote:
        raise click.BadParameter(f"{host} is not a loopback address: anyone who can reach it could answer as "
                                 f"{os.environ.get('USER') or 'you'}. Add --allow-remote (named approvers sign "
                                 "in with their tokens)", param_hint="--listen")
    queue = options.get("queue")
    folder = QueueFolder.open(queue if queue is not None else settings.path)

    def ready(url: str) -> None:
        who = "named approvers' tokens" if allow_remote else f"OS user {_user()}"
        click.echo(f"nami: the approvals of {folder.path}, answered as {who}, at:\n  {url}\n"
                   "  (`nami approvals --url` takes this token in $NAMI_PAGE_TOKEN or --token-file FILE, never in "
                   "the URL: command lines are seen by every user)", err=True)

    serve_page(folder, host, int(port_text), approvers=settings.approvers, remote=allow_remote,
               allowed_hosts=allow_hosts, on_ready=ready)


def _user() -> str:
    from nami_yaml.approvals.store import user_name

    return user_name(os.getuid())
