"""Python work that might never finish, run in a child process that a deadline or Ctrl-C can kill.

A catastrophic backtrack in ``re`` or a quadratic parse holds the GIL: no timeout or Ctrl-C can stop it
inside nami. A child process can be killed with its process group (runners/process.py, the one
subprocess path). The child imports ``module:function``, calls it with the request (JSON on stdin) and
writes the reply (JSON on stdout).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.plan import SandboxPlan

# -I: no PYTHON* variables, no user site, and not the working folder on sys.path. The package's parent
# is appended so the child finds nami_yaml from a source checkout too.
_CHILD = ("import sys, json, importlib; sys.path.append(sys.argv[1]); module, _, name = sys.argv[2].partition(':'); "
          "json.dump(getattr(importlib.import_module(module), name)(json.load(sys.stdin)), sys.stdout)")
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


class ChildFailed(Exception):
    """The child crashed or answered something that is not a JSON object; the message says why."""


def call_in_child(target: str, request: Mapping[str, Any], *, timeout: float, cancel: threading.Event,
                  env: dict[str, str], cwd: Path, max_output: int, sandbox: SandboxPlan | None) -> dict[str, Any]:
    """``target(request)`` ("module:function") in a child (in ``sandbox``); raises TimeoutError past
    ``timeout``, InterruptedError when ``cancel`` is set, ChildFailed when it crashed."""
    if not sys.executable:
        raise ChildFailed("no Python interpreter is known to run it in")
    result = run_process(ProcessRequest(
        argv=[sys.executable, "-I", "-c", _CHILD, _PACKAGE_PARENT, target], cwd=cwd, env=env,
        stdin=json.dumps(request).encode(), timeout=max(timeout, 0.0), max_output=max_output, spill_dir=None,
        cancel=cancel, sandbox=sandbox))
    if result.interrupted:
        raise InterruptedError
    if result.timed_out:
        raise TimeoutError
    try:
        reply = json.loads(result.stdout)
    except ValueError:
        reply = None
    if result.exit_code != 0 or result.truncated or not isinstance(reply, dict):
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.exit_code}"]
        raise ChildFailed(detail[0])
    return reply
