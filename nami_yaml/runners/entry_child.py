"""A tool file's entry point, run in a child process in its sandbox: the parent side (:func:`run_in_child`)
and the child's (:func:`main`).

The child gets the request as JSON on stdin and writes its reply as JSON on the stdout it started with;
what the function prints goes to stderr, so it cannot corrupt the reply. Its ``ctx`` is rebuilt from the
run's (workspace, limits, the child's own scrubbed environment, saved-output folder), without the live
parts (the cancel switch: the parent kills the child instead).

Trust: a project that needed trust has ``RuntimeContext.code_check``, which only nami's process can ask.
So, the first time a tool folder is used, nami asks it about every ``.py`` file there and hands the
child the verdicts with each approved file's sha256; the child's import guard refuses a module that was
refused, is new, or no longer has the approved content. Folders trust never covers (hidden ones,
node_modules, site-packages, __pycache__) are not walked: their modules are new to the child, so refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nami_yaml.env_secrets import EnvScrub, child_environment, traced_env
from nami_yaml.result import ToolResult
from nami_yaml.runners.entry_call import call
from nami_yaml.runners.import_guard import CodeCheck
from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.plan import SandboxPlan
from nami_yaml.runtime import RuntimeContext, ToolSettings
from nami_yaml.sandbox_settings import SandboxSettings

MAX_REPLY = 16_000_000  # bytes of the child's JSON reply kept; a larger result is refused
_BOOT = ("import sys; sys.path.append(sys.argv[1]); from nami_yaml.runners.entry_child import main; main()")
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_SKIPPED = frozenset({"node_modules", "site-packages", "dist-packages", "__pycache__"})

_VERDICTS: dict[tuple[str, int], dict[str, Any]] = {}
_VERDICTS_LOCK = threading.Lock()


def run_in_child(target: str, base_dir: Path, args: Mapping[str, Any], ctx: RuntimeContext, sandbox: SandboxPlan, *,
                 timeout: float, passthrough: Iterable[str] = ()) -> ToolResult:
    """Call ``target`` with ``args`` in a child process in ``sandbox``; never raises."""
    if not sys.executable:
        return ToolResult.error("no Python interpreter is known to run the entry point in")
    request = {
        "target": target, "base_dir": str(base_dir), "arguments": args,
        "sys_path": [p for p in sys.path if p and os.path.isabs(p)],
        "trust": None if ctx.code_check is None else _verdicts(base_dir, ctx.code_check),
        "context": {"workspace": str(ctx.workspace), "settings": dataclasses.asdict(ctx.settings),
                    "protected_env": sorted(ctx.protected_env), "spill_dir": str(ctx.spill_dir),
                    "env_scrub": dataclasses.asdict(ctx.env_scrub),
                    # Already inside a sandbox: what it starts is contained by this one.
                    "sandbox": (SandboxSettings(mode="off") if sandbox.active else ctx.sandbox).as_mapping()},
    }
    env = traced_env(child_environment(ctx.host_env, passthrough=passthrough, protected=ctx.protected_env,
                                       scrub=ctx.env_scrub), ctx.trace)
    try:
        stdin = json.dumps(request, ensure_ascii=False, default=str).encode()
    except ValueError as exc:
        return ToolResult.error(f"the arguments cannot be sent to the entry point: {exc}")
    result = run_process(ProcessRequest(
        argv=[sys.executable, "-I", "-B", "-c", _BOOT, _PACKAGE_PARENT], cwd=ctx.workspace, env=env, stdin=stdin,
        timeout=timeout, max_output=MAX_REPLY, spill_dir=None, cancel=ctx.cancel, sandbox=sandbox))
    if result.interrupted:
        return ToolResult.error("interrupted", interrupted=True)
    if result.timed_out:
        return ToolResult.error(f"the entry point {target} did not return within {timeout:g} s (its timeout); "
                                "it was stopped", timed_out=True)
    if result.truncated:
        return ToolResult.error(f"the entry point's result is more than {MAX_REPLY:,} bytes")
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("content"), str):
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit code {result.exit_code}"
        note = f" {result.sandbox_failure.note}" if result.sandbox_failure is not None else ""
        return ToolResult.error(f"the entry point {target} ended without a result: {why}{note}",
                                exit_code=result.exit_code)
    details = reply.get("details") if isinstance(reply.get("details"), dict) else {}
    return ToolResult(reply["content"], ok=bool(reply.get("ok", True)), details=details)


def _verdicts(base_dir: Path, check: CodeCheck) -> dict[str, Any]:
    """``{"approved": {path: sha256}, "refused": {path: reason}}`` for the tool folder, asked once."""
    key = (os.path.normpath(base_dir), id(check))
    with _VERDICTS_LOCK:
        if key not in _VERDICTS:
            approved: dict[str, str] = {}
            refused: dict[str, str] = {}
            for file in _python_files(base_dir):
                reason = check(file)
                if reason:
                    refused[str(file)] = reason
                else:
                    with contextlib.suppress(OSError):
                        approved[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()
            _VERDICTS[key] = {"approved": approved, "refused": refused}
        return _VERDICTS[key]


def _python_files(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED]
        found.extend(Path(root, name) for name in files if name.endswith(".py"))
    return found


# -- the child ------------------------------------------------------------------------------------------

def main() -> None:
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # print() in the tool goes to stderr; the reply has this descriptor to itself
    request = json.load(sys.stdin)
    sys.path.extend(p for p in request["sys_path"] if p not in sys.path)
    base_dir = Path(request["base_dir"])
    trust = request.get("trust")
    result = call(request["target"], base_dir, _trust_check(trust) if trust is not None else None,
                  request["arguments"], _context(request["context"]))
    with os.fdopen(reply_fd, "w", encoding="utf-8") as out:
        json.dump({"content": result.content, "ok": result.ok, "details": result.details}, out, ensure_ascii=False,
                  default=str)


def _trust_check(trust: Mapping[str, Any]) -> CodeCheck:
    approved, refused = trust["approved"], trust["refused"]

    def check(file: Path) -> str | None:
        path = os.path.normpath(file)
        if path in refused:
            return str(refused[path])
        if path not in approved:
            return (f"{file} is not covered by the trust given to this project (it is new, or in a folder trust "
                    "skips); nami does not import it")
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError as exc:
            return f"cannot read {file}: {exc}"
        if digest != approved[path]:
            return (f"{file} changed since it was trusted; nothing from it is imported until the project is "
                    "trusted again (nami trust)")
        return None

    return check


def _context(data: Mapping[str, Any]) -> RuntimeContext:
    scrub = data.get("env_scrub") or {}
    return RuntimeContext(
        workspace=Path(data["workspace"]), settings=ToolSettings(**{
            k: tuple(v) if isinstance(v, list) else v for k, v in data["settings"].items()}),
        host_env=dict(os.environ), protected_env=frozenset(data.get("protected_env") or ()),
        env_scrub=EnvScrub(tuple(scrub.get("names") or ()), tuple(scrub.get("values") or ())),
        spill_dir=Path(data["spill_dir"]), sandbox=SandboxSettings.from_mapping(data.get("sandbox")))
