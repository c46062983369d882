"""``nami replay SESSION``: the session's user turns again, with another model or config, each tool call
served from the recording (app/replay.py); the divergence from the recorded run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nami_yaml.app.options import AgentOptions
from nami_yaml.app.replay import LIVE_CHOICES, ReplayReport, replay_session
from nami_yaml.cli.common import config_option, handle_errors, prompt_trust
from nami_yaml.cli.completion import complete_session_ids
from nami_yaml.display import safe_json, summarize_arguments, visible, visible_line
from nami_yaml.session.store import SessionStore


def session_path(ref: str) -> Path:
    """A session file named by its path, else by its id (or a unique start of it)."""
    given = Path(ref)
    if ref.endswith(".jsonl") and given.is_file():
        return given
    return SessionStore().find(ref)


@click.command("replay")
@click.argument("session", metavar="SESSION", shell_complete=complete_session_ids)
@click.option("--model", "-m", "model_name", metavar="NAME", help="The model to replay with (default: the configured one).")
@click.option("--base-url", metavar="URL", help="The OpenAI-compatible endpoint.")
@click.option("--agent", metavar="NAME", help="Replay with one of this project's named agents.")
@click.option("--live", type=click.Choice(LIVE_CHOICES),
              help="Run tools of this risk that the recording lacks, for real, sandboxed (nothing else ever runs).")
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
@config_option
@handle_errors
def replay(session: str, model_name: str | None, base_url: str | None, agent: str | None, live: str | None,
           as_json: bool, config: str | None) -> None:
    """Run SESSION's user turns again, in order, with the chosen model and settings, serving each tool call
    from the recording: the same tool with the same arguments gets the recorded result. A call the
    recording lacks is not run. Every call is decided by the policy (a stricter --config shows what it
    would refuse; a call it would ask about is reported, not served). No hook runs; nothing is recorded,
    queued or notified. SESSION is a session id (or its start) or a session file.
    """
    options = AgentOptions(config=config, model=model_name, base_url=base_url, agent=agent, trust=prompt_trust)
    report = replay_session(session_path(session), options, live=live)
    if as_json:
        click.echo(safe_json(report.as_dict(), indent=2))
        return
    for line in report_lines(report):
        click.echo(visible_line(line) if not line.startswith("  │") else visible(line))


def call_line(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    shown = summarize_arguments(arguments) if isinstance(arguments, dict) else ""
    by = f"  by {call['by']}" if call.get("by") and call["outcome"] in ("denied", "would ask") else ""
    detail = f" ({call['detail']})" if call.get("detail") and call["outcome"] in ("denied", "would ask") else ""
    first = (call.get("result") or "").splitlines()[:1]
    result = f"  → {first[0]}" if first and call["outcome"] in ("served", "ran live") else ""
    return f"  {call['outcome']:<21} {call['tool']} {shown}{result}{by}{detail}".rstrip()


def report_lines(report: ReplayReport) -> list[str]:
    lines = [f"replay of session {report.session}"]
    for number, turn in enumerate(report.turns, 1):
        lines.append(f"── turn {number}: {' '.join(turn.prompt.split())[:100]}")
        lines.extend(call_line(call) for call in turn.calls)
        if turn.status != "answered":
            lines.append(f"  ended: {turn.status}")
        same = turn.answer == turn.recorded_answer
        lines.append("  answer: the same as recorded" if same else "  answer, recorded:")
        if not same:
            lines.extend("  │ " + part for part in (turn.recorded_answer or "(none)").splitlines())
            lines.append("  answer, now:")
            lines.extend("  │ " + part for part in (turn.answer or "(none)").splitlines())
    first = report.first_difference
    if first is None:
        lines.append("calls: the same as recorded, each served its recorded result")
    else:
        was, now = first["recorded"], first["replayed"]
        shown_was = f"{was['tool']} {summarize_arguments(was['arguments'])}" if was and \
            isinstance(was.get("arguments"), dict) else (was["tool"] if was else "nothing")
        shown_now = f"{now['tool']} {summarize_arguments(now.get('arguments') or {})} ({now['outcome']})" \
            if now else "nothing"
        lines.append(f"diverged at call {first['index']}: recorded {shown_was}; now {shown_now}")
    if report.not_recorded:
        lines.append(f"calls not in the recording: {len(report.not_recorded)}")
    if report.unused:
        lines.append(f"recorded calls not made again: {len(report.unused)}")
    return lines
