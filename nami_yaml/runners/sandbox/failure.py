"""A failure the sandbox caused, named in the result with the key that would allow it, so the model can
change course and the user knows what to declare.

Precise rather than eager: only stderr is read, and only messages the sandbox produces: a write refused
with EROFS ("Read-only file system") at a path the sandbox keeps read-only; an error naming a hidden
path; a network error ("Network is unreachable", "Could not resolve host", a refused connection, ...)
from a call without the network that failed (exit code not 0). And where the program is one the table of
known_programs.py knows (ps, kubectl, aws, ...) and its sandbox lacks what it needs: a process list with
the sandbox's own processes only, or a message saying its network or configuration is missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nami_yaml.runners.sandbox.known_programs import (
    MODE_OFF,
    NEAR_EMPTY_LINES,
    OWN_PROCESS,
    PROC,
    PROCESS_LISTS,
    SYMPTOMS,
    Missing,
    missing,
    programs_in,
    signals_note,
    yaml_lines,
)
from nami_yaml.runners.sandbox.plan import (
    KIND_BASH,
    KIND_CHECK,
    KIND_HOOK,
    KIND_NAMI,
    KIND_SERVER,
    PRIVATE_FOLDERS,
    PRIVATE_TMP,
    READ_ONLY,
    SandboxPlan,
)

_READ_ONLY_FS = re.compile(r"Read-only file system|\bEROFS\b|\[Errno 30\]")
_NETWORK = SYMPTOMS["network"]
# The path a refused write names: "X: Read-only file system" (bash, touch 'X', mkdir ‘X’, git), or
# Python's "[Errno 30] Read-only file system: 'X'".
_REFUSED_PATH = (re.compile(r"([^\s'\"‘’`]+)['\"’`]?:\s*Read-only file system"),
                 re.compile(r"Read-only file system:\s*['\"‘`]([^'\"’`]+)"))
# An absolute or ~ path in a message, as programs quote them ('x', "x", ‘x’, `x`, or bare).
_PATH = re.compile(r"(?<![\w.~/-])((?:~|\.{1,2})?/[^\s'\"‘’`,;:()<>\[\]{}]+|[\w.-]+/[^\s'\"‘’`,;:()<>\[\]{}]*)")


class Finished(Protocol):
    exit_code: int | None
    stderr: str


@dataclass(frozen=True)
class SandboxFailure:
    """What the sandbox refused (``kind``: write, hidden, network), the path concerned, and the key
    (``key``: the YAML to add, ``where``: the file it goes in) that would allow it."""

    kind: str
    path: str | None
    key: str
    where: str
    note: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "key": self.key, "where": self.where}


def classify_failure(plan: SandboxPlan | None, result: Finished, argv: Sequence[str] = ()) -> SandboxFailure | None:
    """The sandbox's part in a failed process, or None when nothing says the sandbox caused it. ``argv``:
    what ran, for the programs known to need what the sandbox keeps (known_programs.py)."""
    if plan is None or not plan.active or plan.kind == KIND_NAMI or result.exit_code is None:
        return None
    failed = result.exit_code != 0
    known = _known_program(plan, result, argv)
    if known is not None:
        return known
    for line in result.stderr.splitlines()[-200:]:
        # A refused write or a hidden path is the sandbox's doing even where the command went on; a
        # network error is taken as one only from a command that failed.
        found = _write(plan, line) or _hidden(plan, line) or (_network(plan, line) if failed else None)
        if found is not None:
            return found
    return None


def _known_program(plan: SandboxPlan, result: Finished, argv: Sequence[str]) -> SandboxFailure | None:
    """A known program (ps, kubectl, aws...) whose result shows the sandbox kept from it what it needs."""
    reads = [_shown(plan, p) for p in plan.reads]
    found = [m for name, args in programs_in(argv)
             if (m := missing(name, args, processes=plan.host_proc, network=plan.network, reads=reads))]
    found = [_hidden_only(plan, m) for m in found]
    found = [m for m in found if m]
    if not found:
        return None
    tail = "\n".join(result.stderr.splitlines()[-200:])
    failed = result.exit_code != 0
    stdout = str(getattr(result, "stdout", ""))  # a server's exit has none
    # Near-empty, or listing the sandbox itself (its pid 1, bwrap): the sandbox's own processes only.
    near_empty = (len([line for line in stdout.splitlines() if line.strip()]) <= NEAR_EMPTY_LINES
                  or OWN_PROCESS.search(stdout[:20000]) is not None)
    silent_failure = failed and not stdout.strip() and not tail.strip()
    symptoms = []
    if any(m.processes and m.program in PROCESS_LISTS and near_empty for m in found) or (
            any(m.processes or m.signals for m in found) and (silent_failure or SYMPTOMS["processes"].search(tail))):
        symptoms.append("processes")
    if failed and any(m.network for m in found) and SYMPTOMS["network"].search(tail):
        symptoms.append("network")
    if failed and any(m.reads for m in found) and SYMPTOMS["config"].search(tail + "\n" + stdout[-4000:]):
        symptoms.append("config")
    if not symptoms:
        return None
    kind = symptoms[0]
    path = PROC if kind == "processes" else next((p for m in found for p in m.reads), None) if kind == "config" else None
    keyed = [m for m in found if m.keyed]
    signalling = [m.program for m in found if m.signals]
    if not keyed:  # kill, pkill: no key of a tool reaches the host's processes
        where = _where(plan, "mode")
        return SandboxFailure(kind, None, MODE_OFF, where,
                              f"[sandbox: {signals_note(signalling, where)}]")
    yaml = yaml_lines(keyed)
    where = _where(plan, "reads")
    why = "; ".join(_why(m) for m in keyed)
    note = f"[sandbox: {why}. To give it that, declare in {where}: {yaml}]"
    return SandboxFailure(kind, path, yaml, where, note)


def _hidden_only(plan: SandboxPlan, found: Missing) -> Missing:
    """``found`` without the paths the sandbox does not hide here (a kubeconfig this machine lacks)."""
    hidden = [p for p in found.reads if not p.startswith("$") and any(
        _inside(_path(plan, p), folder) or _inside(folder, _path(plan, p))
        for folder in (*plan.hidden, *PRIVATE_FOLDERS))]
    return Missing(found.program, found.processes, found.network, tuple(hidden), found.signals)


def _why(found: Missing) -> str:
    parts = []
    if found.processes:
        parts.append(f"{found.program} sees only the processes of this call's own sandbox, not the host's")
    if found.network:
        parts.append(f"{found.program} needs the network, and this call has none (a network of its own, without "
                     "even the host's 127.0.0.1)")
    if found.reads:
        parts.append(f"{found.program} reads its configuration from {_joined(found.reads)}, hidden from tools")
    return "; ".join(parts)


def _joined(parts: Sequence[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _write(plan: SandboxPlan, line: str) -> SandboxFailure | None:
    if not _READ_ONLY_FS.search(line):
        return None
    named = [m.group(1) for pattern in _REFUSED_PATH for m in pattern.finditer(line)]
    paths = [_path(plan, token) for token in named] if named else _paths(plan, line)
    for path in paths:
        if path in plan.read_only or any(folder in path.parents for folder in plan.read_only):
            return _failure(plan, "write", path, "writable",
                            f"nami keeps {_shown(plan, path)} read-only in the sandbox: what it holds runs later "
                            "(git reads its hooks and config, nami its configuration and tool folders), also "
                            "outside any sandbox; edit_file and write_file can change it (they ask)")
        if plan.mode == READ_ONLY and _inside(path, plan.workspace):
            return _failure(plan, "write", path, "mode",
                            f"the workspace is read-only for this call (sandbox.mode: read-only), so "
                            f"{_shown(plan, path)} cannot be written")
        if not _writable(plan, path):
            return _failure(plan, "write", path, "writable",
                            f"writing {_shown(plan, path)} was refused: the sandbox lets this call write "
                            f"{_writable_text(plan)} only")
    if paths:
        return None  # every path named is writable here: not the sandbox
    return _failure(plan, "write", None, "writable",
                    f"a write was refused: the sandbox lets this call write {_writable_text(plan)} only")


def _hidden(plan: SandboxPlan, line: str) -> SandboxFailure | None:
    for path in _paths(plan, line):
        if any(_inside(path, folder) for folder in plan.sealed):
            return SandboxFailure("hidden", str(path), "", "",
                                  f"[sandbox: {_shown(plan, path)} is one of nami's own folders (trust store, "
                                  "sessions, audit log, configuration), which no tool can read or write]")
        if any(_inside(path, folder) for folder in plan.hidden) or (
                any(_inside(path, folder) for folder in PRIVATE_FOLDERS) and path not in plan.reads):
            what = "is hidden from tools (credentials)" if not any(
                _inside(path, folder) for folder in PRIVATE_FOLDERS) else "is in /run, which is empty in the sandbox"
            return _failure(plan, "hidden", path, "reads", f"{_shown(plan, path)} {what}")
    return None


def _network(plan: SandboxPlan, line: str) -> SandboxFailure | None:
    if plan.network or not _NETWORK.search(line):
        return None
    return _failure(plan, "network", None, "network",
                    "this call has no network: the sandbox gives it a network of its own, without even the "
                    "host's 127.0.0.1")


def _failure(plan: SandboxPlan, kind: str, path: Path | None, key: str, what: str) -> SandboxFailure:
    shown = _shown(plan, path) if path is not None else None
    if key == "network":
        yaml = "sandbox: {network: true}"
    elif key == "mode":
        yaml = "sandbox: {mode: auto}"
    else:
        yaml = f"sandbox: {{{key}: [{shown or '<path>'}]}}"
    where = _where(plan, key)
    allow = "needs the network" if key == "network" else "must write there" if key != "reads" else "must read it"
    if key == "mode":
        note = f"[sandbox: {what}; {where} sets it]"
    else:
        note = f"[sandbox: {what}. If it {allow}, declare it in {where}: {yaml}]"
    return SandboxFailure(kind, shown, yaml, where, note)


def _where(plan: SandboxPlan, key: str) -> str:
    if plan.kind == KIND_HOOK:
        return f"the hook's entry of hooks: ({plan.origin})" if plan.origin else "the hook's entry of hooks:"
    if plan.kind == KIND_SERVER:
        return f"the server's entry of mcp_servers ({plan.origin})" if plan.origin else "the server's mcp_servers entry"
    if plan.kind in (KIND_BASH, KIND_CHECK) or key == "mode":
        return "agent.yaml (or your user config)"
    return f"its tool file ({plan.origin})" if plan.origin else "its tool file"


def _paths(plan: SandboxPlan, line: str) -> list[Path]:
    # A program naming itself first ("/usr/bin/bash: line 1: ...") is not what failed.
    return [_path(plan, m.group(1)) for m in _PATH.finditer(line) if not line[m.end():].startswith(": line ")]


def _path(plan: SandboxPlan, token: str) -> Path:
    token = token.rstrip(".").strip("'\"‘’`")
    if token.startswith("~/") and plan.home is not None:
        path = plan.home / token[2:]
    elif token.startswith("/"):
        path = Path(token)
    else:
        path = plan.workspace / token
    return Path(os.path.normpath(path))


def _writable(plan: SandboxPlan, path: Path) -> bool:
    """Whether the sandbox lets ``path`` be written: the innermost mount holding it decides."""
    mounts = [(Path("/"), False), (PRIVATE_TMP, True), (plan.workspace, plan.mode != READ_ONLY),
              *((p, False) for p in (*plan.visible, *plan.reads, *plan.hidden, *plan.read_only)),
              *((p, True) for p in (*plan.writable, *plan.call_writes))]
    holding = [(len(p.parts), writable) for p, writable in mounts if _inside(path, p)]
    return max(holding)[1]


def _writable_text(plan: SandboxPlan) -> str:
    areas = [] if plan.mode == READ_ONLY else [f"the workspace {_shown(plan, plan.workspace)}"]
    areas += [_shown(plan, p) for p in (*plan.writable, *plan.call_writes)]
    areas.append("its own /tmp")
    return ", ".join(areas[:-1]) + " and " + areas[-1] if len(areas) > 1 else areas[0]


def _shown(plan: SandboxPlan, path: Path) -> str:
    home = plan.home
    if home is not None and (path == home or home in path.parents):
        return "~/" + str(path.relative_to(home)) if path != home else "~"
    return str(path)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
