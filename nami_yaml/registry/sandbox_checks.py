"""A tool whose program is known to need what its ``sandbox:`` does not declare (the host's processes, the
network, a hidden configuration folder): a warning with the ``sandbox:`` line to write. The knowledge is
runners/sandbox/known_programs.py's table, which also words a result's hint; only ``nami check`` (a Host)
looks, and only where the sandbox is on."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nami_yaml.registry.draft import ToolDraft
from nami_yaml.runners.sandbox.known_programs import (
    PROC,
    Missing,
    missing,
    programs_in,
    script_programs,
    signals_note,
    yaml_lines,
)


def check_sandbox_needs(draft: ToolDraft) -> None:
    host = draft.host
    if host is None or host.sandbox.mode == "off" or draft.targeted or draft.runner_key is None:
        return  # a targeted tool's program runs on its target, not in this machine's sandbox
    declared = draft.raw.get("sandbox")
    declared = declared if isinstance(declared, dict) else {}
    reads = [str(p) for p in (*_listed(declared.get("reads")), *host.sandbox.reads)]
    network = declared.get("network") is True
    found: list[Missing] = []
    for name, args in _programs(draft):
        lacking = missing(name, args, processes=PROC in reads, network=network, reads=reads)
        if lacking.signals and draft.runner_kind == "script":  # `kill $!`: most often a job of its own
            lacking = replace(lacking, signals=False)
        if lacking and lacking.program not in {m.program for m in found}:
            found.append(lacking)
    if not found:
        return
    keyed = [m for m in found if m.keyed]
    parts = []
    if keyed:
        what = "; ".join(f"{m.program} needs {m.described()}" for m in keyed)
        verb = "write its sandbox as" if declared else "add to the tool"
        parts.append(f"{what}, which the sandbox gives a tool only when it declares them (by default a tool sees "
                     "its own processes only, has no network, and sees of the home folder only what it declares); "
                     f"{verb}: {yaml_lines(keyed, declared)}")
    signalling = [m.program for m in found if m.signals]
    if signalling:
        parts.append(signals_note(signalling, "agent.yaml"))
    draft.warn((draft.runner_key,), "; ".join(parts), key=True)


def _programs(draft: ToolDraft) -> list[tuple[str | None, tuple[str | None, ...]]]:
    runner = draft.raw.get(draft.runner_key or "")
    if draft.runner_kind == "script" and isinstance(runner, str):
        return script_programs(runner)
    found: list[tuple[str | None, tuple[str | None, ...]]] = []
    for _, argv in draft.argvs:
        # A placeholder or an optional group is no known word: "{}" (never a subcommand the table names).
        words = [w if isinstance(w, str) and "{" not in w else "{}" for w in argv]
        if words and words[0] != "{}":
            found += programs_in(words)
    return found


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []
