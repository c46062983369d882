"""``nami approvals``: the pending approvals of the queue (``approvals.via: queue``) and their answers.

A person answers from any shell: the answer counts as the OS user who runs this command (and as the named
approver whose token ``$NAMI_APPROVER_TOKEN`` holds); ``$NAMI_APPROVER`` is only a label for the audit."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from nami_yaml.cli.common import config_option, handle_errors
from nami_yaml.display import safe_json, visible, visible_line

queue_option = click.option("--queue", metavar="FOLDER", type=click.Path(file_okay=False),
                            help="The queue folder (default: approvals.path, else nami's state folder).")
json_option = click.option("--json", "as_json", is_flag=True, help="JSON, redacted as the audit log is.")


def _age(created: Any) -> str:
    if not isinstance(created, (int, float)):
        return "?"
    seconds = max(0, int(time.time() - created))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _entry(data: dict[str, Any], state: str) -> dict[str, Any]:
    return {**{k: v for k, v in data.items() if k != "details"}, "state": state, "plan_details": data.get("details")}


def _who(data: dict[str, Any]) -> str:
    given = [f"{a.get('who')} ({a.get('how')})" for a in data.get("approvals") or [] if a.get("answer") == "approve"]
    need = data.get("required") or 1
    return (", ".join(given) or "nobody yet") + (f" ({len(given)} of {need})" if need > 1 else "")


def _lines(data: dict[str, Any], state: str, *, full: bool) -> list[str]:
    head = (f"{data.get('id')}  {_age(data.get('created_unix'))} ago  {state}  "
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
    lines.append("  approved by " + visible_line(_who(data)))
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
            lines.append(f"  stdin: {details['stdin'].get('bytes')} bytes, sha256 {details['stdin'].get('sha256')}")
        if details.get("sandbox"):
            lines.append("  sandbox: " + visible_line(json.dumps(details["sandbox"], ensure_ascii=False)))
        run = data.get("run") or {}
        lines.append(visible_line(f"  run: {run.get('user')}@{run.get('host')} pid {run.get('pid')}, "
                                  f"session {run.get('session')}, workspace {run.get('workspace')}"))
        lines.append(f"  digest: {(data.get('binding') or {}).get('digest')}")
        if data.get("outcome"):
            lines.append("  outcome: " + visible(str(data["outcome"])))
    if state == "pending":
        answer = data.get("answer") or {}
        lines.append(f"  answer: {answer.get('approve')}  |  {answer.get('deny')}")
    return lines


@click.group("approvals", invoke_without_command=True)
@config_option
@queue_option
@json_option
@click.option("--all", "show_all", is_flag=True, help="Also those answered, withdrawn or timed out.")
@click.pass_context
@handle_errors
def approvals_group(ctx: click.Context, config: str | None, queue: str | None, as_json: bool,
                    show_all: bool) -> None:
    """List the approvals waiting in the queue: id, age, agent, tool, target, the exact argv or arguments,
    the rule that asks, who has approved so far. Answer with `nami approvals approve|deny ID`."""
    ctx.ensure_object(dict)
    ctx.obj.update(config=config, queue=queue)
    if ctx.invoked_subcommand is not None:
        return
    from nami_yaml.app.approval_route import queue_of
    from nami_yaml.approvals.answering import state_of

    folder = queue_of(config, queue)
    shown = [(stored.data, state_of(stored)) for stored in folder.listing()]
    shown = [(data, state) for data, state in shown if show_all or state == "pending"]
    if as_json:
        click.echo(safe_json([_entry(data, state) for data, state in shown], indent=2))
        return
    if not shown:
        click.echo(f"no approvals waiting in {folder.path}", err=True)
        return
    for data, state in shown:
        click.echo("\n".join(_lines(data, state, full=False)))


def _folder(ctx: click.Context) -> Any:
    from nami_yaml.app.approval_route import queue_of

    options = ctx.find_object(dict) or {}
    return queue_of(options.get("config"), options.get("queue"))


@approvals_group.command("show")
@click.argument("approval_id", metavar="ID")
@json_option
@click.pass_context
@handle_errors
def show(ctx: click.Context, approval_id: str, as_json: bool) -> None:
    """Everything about one approval: what would run, where, with which environment and sandbox, who asks,
    who answered, the digest it binds."""
    from nami_yaml.approvals.answering import find, state_of

    stored = find(_folder(ctx), approval_id)
    state = state_of(stored)
    if as_json:
        click.echo(safe_json(_entry(stored.data, state), indent=2))
        return
    click.echo("\n".join(_lines(stored.data, state, full=True)))


@approvals_group.command("approve")
@click.argument("approval_id", metavar="ID")
@click.option("--reason", metavar="TEXT", help="Why (recorded in the audit log).")
@click.pass_context
@handle_errors
def approve(ctx: click.Context, approval_id: str, reason: str | None) -> None:
    """Approve a pending call, as the OS user running this (and the approver of $NAMI_APPROVER_TOKEN).
    Exit 2: unknown id, answered already, withdrawn, or answered by you already."""
    from nami_yaml.approvals.answering import give

    given = give(_folder(ctx), approval_id, approve=True, reason=reason)
    click.echo(visible_line(f"{approval_id}: {given.message}"))


@approvals_group.command("deny")
@click.argument("approval_id", metavar="ID")
@click.option("--reason", metavar="TEXT", required=True, help="Why not: the model is told.")
@click.pass_context
@handle_errors
def deny(ctx: click.Context, approval_id: str, reason: str) -> None:
    """Refuse a pending call; the reason goes to the model. Any deny wins over any approval."""
    from nami_yaml.approvals.answering import give

    given = give(_folder(ctx), approval_id, approve=False, reason=reason)
    click.echo(visible_line(f"{approval_id}: {given.message}"))
