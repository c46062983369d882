"""The audit log: one JSON line for every tool call, run or refused, from every nami process (and one
for each approval whose webhook notification failed, ``status: "notify failed"``).

Each line is written whole, with one ``write`` on a file opened with O_APPEND, under an exclusive
``flock`` (O_APPEND alone is not enough on NFS, where team logs often live), so lines from concurrent
processes never interleave. The log is opened once before anything runs, so a log that cannot be written
is an error up front; if a write fails later (a full disk), no further tool runs: the policy denies
every call, saying why, rather than losing records silently.

Each line carries the hash of the line before it and its own (policy/audit_chain.py), computed under the
lock, so `nami log --verify` finds an edited, removed or reordered record.

Values of secret-looking parameters (and of environment variables with such names) are redacted,
wherever they appear in the rendered command.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import getpass
import hashlib
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nami_yaml.agent.hooks import CallRecord, Decision
from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.display import compact_json, visible_json
from nami_yaml.env_secrets import NON_INTERACTIVE_ENV, is_secret, is_secret_name, is_secret_value
from nami_yaml.errors import NamiError
from nami_yaml.policy.audit_chain import START, previous_hash, seal
from nami_yaml.xdg import default_state_dir

REDACTED = "[redacted]"
MIN_FREE_BYTES = 1 << 20  # below this the log is treated as full before anything runs
# Shorter secret values are replaced only where they are a whole value: a variable such as Ray's
# RAY_AUTH_MODE=token has a secret-looking name, and replacing "token" inside every text would garble the log.
MIN_SECRET_LENGTH = 8
NOTIFY_FAILED = "notify failed"  # the status of a line that says an approval's webhook notification failed


class AuditError(NamiError):
    """The audit log cannot be written."""


def default_audit_path() -> Path:
    return default_state_dir() / "audit.jsonl"


def configured_path(setting: str | None) -> Path:
    return Path(setting) if setting else default_audit_path()


@dataclass
class AuditContext:
    """What every line of one agent (or one ``nami tools call``) shares."""

    session: str
    workspace: str
    via: str  # "run", "chat", "tools call", "api", …
    config: str | None = None
    config_trust: str | None = None  # why its rules count: "trusted" (found, then trusted) or "named by --config"
    client: str | None = None  # who asked, when it is a program: the MCP client's name (`nami mcp serve`)
    agent: str | None = None  # the named agent that made the calls
    parent_session: str | None = None  # for a sub-agent: the session of the agent that handed it the task


class AuditLog:
    """``after_tool`` writes a line per call; ``before_tool`` refuses every call once a write failed."""

    def __init__(self, path: Path, context: AuditContext, on_error: Callable[[str], None] | None = None):
        self.path = path
        self.context = context
        self.on_error = on_error
        self.failure: str | None = None
        self._lock = threading.Lock()  # one line at a time from this process (reads run in parallel)
        self._host = socket.gethostname()
        self._user = _user()
        self._host_secrets: list[str] | None = None  # read from the environment at the first line
        self.last_hash: str | None = None  # the hash of the last line this log wrote (audit_chain.py)

    @classmethod
    def open(cls, path: Path, context: AuditContext, on_error: Callable[[str], None] | None = None) -> AuditLog:
        """Check the log can be appended to, creating it (0600, its folder 0700) if needed."""
        problem = writable_problem(path)
        if problem:
            raise AuditError(f"the audit log {path} cannot be written: {problem}. Nothing was run. "
                             "Fix it, or set audit.path in agent.yaml or your user config.")
        return cls(path, context, on_error)

    # -- hooks ----------------------------------------------------------------------------------------

    def before_tool(self, call: PreparedCall) -> Decision | None:
        if self.failure is None:
            return None
        return Decision.deny(f"the audit log {self.path} cannot be written ({self.failure}), and no tool runs "
                             "without a record", "audit log")

    def after_tool(self, record: CallRecord) -> None:
        if record.result.details.get("dry_run"):
            return  # nothing ran
        # The record's hash goes out with the call's result event (telemetry, --json): a copy kept
        # elsewhere anchors the chain up to it (docs/security.md).
        if (digest := self._record(lambda: self.entry(record))) is not None:
            record.result.details["audit_record"] = digest

    def not_notified(self, pending: Mapping[str, Any], problem: str) -> None:
        """A line of its own for a pending approval (approvals/queue.py, already redacted) whose webhook
        notification failed (``approvals.notify``): ``status: "notify failed"``, the approval's id and why.
        The call's own line follows when it is decided. Called from the notifier's thread."""
        self._record(lambda: {
            **self._common(), "call_id": None, "tool": pending.get("tool"), "status": NOTIFY_FAILED,
            "risk": pending.get("risk"), **({"target": pending["target"]} if pending.get("target") is not None else {}),
            "arguments": pending.get("arguments"), "plan": pending.get("details"), "approval": pending.get("id"),
            "decision": None, "decided_by": None,
            "reason": f"approval {pending.get('id')}: the webhook of approvals.notify failed ({problem})"})

    def _record(self, make: Callable[[], dict[str, Any]]) -> str | None:
        try:
            return self.write(make())
        except Exception as exc:  # not only a full disk: a call that ran without its line stops the tools
            with self._lock:
                first = self.failure is None
                self.failure = (exc.strerror if isinstance(exc, OSError) else None) or f"{type(exc).__name__}: {exc}"
            if first and self.on_error is not None:
                self.on_error(f"the audit log {self.path} cannot be written ({self.failure}); "
                              "no further tool will run")
            return None

    # -- lines ----------------------------------------------------------------------------------------

    def entry(self, record: CallRecord) -> dict[str, Any]:
        prepared, decision, result = record.prepared, record.decision, record.result
        secrets: list[str] = []
        if prepared is not None:
            secrets = self.host_secrets()
            if named := secret_values(prepared.arguments):  # "abcd" in "abcdef": longest first
                secrets = sorted({*named, *secrets}, key=len, reverse=True)
        content = _bytes(result.content)
        line: dict[str, Any] = {
            **self._common(),
            "call_id": record.call.id,
            "tool": record.call.name,
            "status": status(record),
        }
        if prepared is not None:
            line["risk"] = prepared.risk
            target = getattr(prepared, "target", None)
            if target is not None:
                line["target"] = target
            line["arguments"] = redact(prepared.arguments)
            line["plan"] = plan_entry(prepared, secrets)
            planned = result.details.get("plan_sha256") or (line["plan"].get("plan_step") or {}).get("sha256")
            if planned:  # the plan this call was approved and ran against (runners/plan_step.py)
                line["plan_sha256"] = planned
        else:
            raw = _bytes(record.call.arguments)
            line["raw_arguments"] = {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
        line["decision"] = decision.action if decision else None
        line["decided_by"] = decision.source if decision else None
        if record.asked is not None:  # the policy asked; decided_by is who answered
            line["asked_by"] = record.asked.source
        line["reason"] = _scrub(decision.reason, secrets) if decision and decision.reason else None
        line["started"] = iso_time(record.started) if record.started is not None else None
        line["duration"] = record.duration
        line["ok"] = result.ok
        line["exit_code"] = result.details.get("exit_code")
        for flag in ("timed_out", "interrupted", "truncated"):
            if result.details.get(flag):
                line[flag] = True
        for key in ("sandbox_failure", "escalated"):  # what the sandbox stopped; a rerun a person allowed without it
            if result.details.get(key):
                line[key] = result.details[key]
        line["output_bytes"] = len(content)
        line["output_sha256"] = hashlib.sha256(content).hexdigest()
        return line

    def _common(self) -> dict[str, Any]:
        """What every line says of when, who, where."""
        return {
            "time": iso_time(time.time()),
            "session": self.context.session,
            "via": self.context.via,
            "user": self._user,
            "host": self._host,
            "pid": os.getpid(),
            "workspace": self.context.workspace,
            "config": self.context.config,
            "config_trust": self.context.config_trust,
            **({"client": self.context.client} if self.context.client else {}),
            **({"agent": self.context.agent} if self.context.agent else {}),
            **({"parent_session": self.context.parent_session} if self.context.parent_session else {}),
        }

    def host_secrets(self) -> list[str]:
        """:func:`host_secrets`, read once per log (a run's): scanning every variable of the environment
        at every call cost more than the rest of the line. Tools get a copy of the environment taken when
        the project was opened, so a variable set later reaches no tool either."""
        if self._host_secrets is None:
            self._host_secrets = host_secrets()
        return self._host_secrets

    def write(self, entry: dict[str, Any]) -> str:
        # Lone surrogates (JSON from the model may hold "\ud800") and invisible or control characters are
        # written as \u escapes: a line is always valid UTF-8, reads back to the same values, and
        # `nami log --json` prints nothing live on a terminal.
        with self._lock:
            self.last_hash = append_record(self.path, entry)
            return self.last_hash

    def head(self) -> str | None:
        """The hash of the log's latest record, whoever wrote it (another agent or process on the same
        file); None when it cannot be read (an append-only shared log)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return self.last_hash
        try:
            head = previous_hash(fd)
            return None if head == START else head
        except OSError:
            return self.last_hash
        finally:
            os.close(fd)


def status(record: CallRecord) -> str:
    """ran | denied | invalid | not run (cut off or interrupted before it started)."""
    if record.prepared is None:
        return "invalid"
    if record.decision is not None and record.decision.action == "deny":
        return "denied"
    if record.started is None:
        return "not run"
    return "ran"


def plan_entry(call: PreparedCall, secrets: list[str]) -> dict[str, Any]:
    """What ran: argv (and a pipeline's stages), cwd, timeout, environment changes (secret names redacted), a
    digest of stdin and of a script's text; or the Python entry point."""
    try:
        plan = call.plan()
    except Exception as exc:  # the record must still be written
        return {"error": f"{type(exc).__name__}: {exc}"}
    entry: dict[str, Any] = {"kind": call.kind}
    if "argv" in plan:
        script = plan.get("script")
        entry["argv"] = ["[script]" if script is not None and part == script else _scrub(part, secrets)
                         for part in plan["argv"]]
        if isinstance(plan.get("pipeline"), list):  # its argv is nami's launcher: the stages are what ran
            entry["pipeline"] = [[_scrub(part, secrets) for part in stage] for stage in plan["pipeline"]]
        entry["cwd"] = plan["cwd"]
        entry["timeout"] = plan.get("timeout")
        # The tool's own variables; the fixed non-interactive ones (PAGER=cat, …) are the same in every line.
        entry["env_set"] = {name: REDACTED if is_secret_name(name) or is_secret_value(value) else _scrub(value, secrets)
                            for name, value in (plan.get("env_set") or {}).items()
                            if NON_INTERACTIVE_ENV.get(name) != value}
        if plan.get("stdin") is not None:
            stdin = _bytes(plan["stdin"])
            entry["stdin"] = {"bytes": len(stdin), "sha256": hashlib.sha256(stdin).hexdigest()}
        if script is not None:
            entry["script_sha256"] = hashlib.sha256(_bytes(script)).hexdigest()
    elif "entrypoint" in plan:
        entry["entrypoint"] = plan["entrypoint"]
    elif "mcp_server" in plan:
        entry.update(mcp_server=plan["mcp_server"], mcp_tool=plan["mcp_tool"], endpoint=plan.get("endpoint"),
                     timeout=plan.get("timeout"))
    step = plan.get("plan_step")
    if isinstance(step, dict):  # the tool's plan step: what it ran, and the hash of the plan the call ran against
        entry["plan_step"] = {key: [_scrub(part, secrets) for part in step[key]] for key in ("argv", "show")
                              if isinstance(step.get(key), list)}
        entry["plan_step"]["sha256"] = step.get("sha256")
        if step.get("approved"):  # who approved running it without a sandbox (app/guards.py)
            entry["plan_step"]["approved"] = _scrub(str(step["approved"]), secrets)
    if isinstance(plan.get("sandbox"), dict):
        # The call's sandbox as it ran (mode, network, what it could write and read beyond the defaults).
        entry["sandbox"] = plan["sandbox"]
    return entry


def redact(value: Any, name: str = "") -> Any:
    """A copy of ``value`` with the values of secret-looking keys replaced, at any depth."""
    if name and is_secret_name(name):
        return REDACTED
    if isinstance(value, dict):
        return {key: redact(item, str(key)) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def secret_values(value: Any, name: str = "") -> list[str]:
    """The text of every value under a secret-looking key, longest first (so "abcd" inside "abcdef" is
    not half-replaced)."""
    found: list[str] = []
    if name and is_secret_name(name):
        if isinstance(value, (dict, list)):
            found.extend(_strings(value))
        elif value is not None and not isinstance(value, bool):
            found.append(str(value))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.extend(secret_values(item, str(key)))
    elif isinstance(value, list):
        for item in value:
            found.extend(secret_values(item))
    return sorted({s for s in found if s}, key=len, reverse=True)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def host_secrets() -> list[str]:
    """The values of nami's secret-looking variables: a tool's ``env:`` may expand one into a variable
    with an innocent name (``DB_URL: postgres://app:${DB_PASSWORD}@db``)."""
    return sorted({value for name, value in os.environ.items() if value and is_secret(name, value)},
                  key=len, reverse=True)


def scrub_text(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` (longest first: :func:`host_secrets`, :func:`secret_values`) replaced
    as the audit log replaces them; what else carries a run's text (telemetry) redacts alike."""
    return _scrub(text, secrets)


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if text == secret:
            return REDACTED
        if len(secret) >= MIN_SECRET_LENGTH:
            # Also as JSON spells it: a script's $NAMI_ARGS and object arguments hold JSON text.
            for spelling in {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}:
                text = text.replace(spelling, REDACTED)
    return text


def _bytes(text: str) -> bytes:
    """The bytes a text stands for: undecodable bytes (U+DC80-U+DCFF) as they were; another lone
    surrogate, which only JSON from the model can hold, in its UTF-8 spelling."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def iso_time(seconds: float) -> str:
    whole = int(seconds)
    return _whole_second(whole) + f".{int((seconds - whole) * 1000):03d}Z"


@functools.lru_cache(maxsize=4)
def _whole_second(whole: int) -> str:
    """(A call's two times, and the next call's, mostly fall in the same second.)"""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no name for this uid (containers)
        return str(os.getuid())


# -- the file ------------------------------------------------------------------------------------------

def writable_problem(path: Path) -> str | None:
    """Why ``path`` cannot take audit lines, or None. Creates the file (and its folder) if missing."""
    try:
        if not path.parent.exists():
            path.parent.mkdir(parents=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "it is not a regular file"
        space = os.fstatvfs(fd)
        if space.f_bavail * space.f_frsize < MIN_FREE_BYTES:
            return "its file system is full"
    finally:
        os.close(fd)
    return None


def append_record(path: Path, entry: dict[str, Any]) -> str:
    """Append ``entry`` as one line chained to the line before it (policy/audit_chain.py); its hash.
    ``prev`` is read under the lock, so records of concurrent processes form one chain."""
    def line(prev: str | None) -> bytes:
        sealed, digest = seal(_serialize({**entry, "prev": prev}))
        hashes.append(digest)
        return sealed + b"\n"

    hashes: list[str] = []
    append_line(path, line)
    return hashes[-1]


def append_records(path: Path, entries: list[dict[str, Any]]) -> None:
    """Append records written elsewhere (a batch worker's), chained here; their own chain fields are
    replaced (the remote hash kept as ``remote_hash``: the worker's log can vouch for it)."""
    def lines(prev: str | None) -> bytes:
        data = b""
        for entry in entries:
            copy = {key: value for key, value in entry.items() if key not in ("prev", "hash")}
            if "hash" in entry:
                copy["remote_hash"] = entry["hash"]
            sealed, digest = seal(_serialize({**copy, "prev": prev}))
            prev = digest
            data += sealed + b"\n"
        return data

    if entries:
        append_line(path, lines)


def _serialize(entry: dict[str, Any]) -> bytes:
    # Lone surrogates (JSON from the model may hold "\ud800") and invisible or control characters are
    # written as \u escapes: a line is always valid UTF-8, reads back to the same values, and
    # `nami log --json` prints nothing live on a terminal.
    return visible_json(compact_json(entry)).encode("utf-8")


def append_line(path: Path, data: bytes | Callable[[str | None], bytes]) -> None:
    """Append ``data`` (whole lines) whole: O_APPEND, an exclusive lock, and a retry for short writes.
    ``data`` may be a function of the hash of the file's last line (None when the log cannot be read),
    called under the lock."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        readable = True
    except PermissionError:  # an append-only shared log may be writable and not readable
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        readable = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if callable(data):
            data = data(previous_hash(fd) if readable else None)
        if readable:
            size = os.fstat(fd).st_size
            # A line an earlier failure cut short stays alone on its line; the next one starts afresh.
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view = view[written:]
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
