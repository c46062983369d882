"""The launcher of a ``pipeline:`` tool, run inside the call's sandbox (runners/pipeline.py starts it).

It starts every stage (an argv, never a shell) with the next one reading its stdout, in its own process
group (the call's: a timeout or Ctrl-C kills them all), and ends like ``set -o pipefail``: the exit code
of the last stage that failed. A stage ended by SIGPIPE (a later one stopped reading: ``head``) did not
fail. Each stage's stderr is passed on as it is; a failure ends with a line naming the stage.

Standard library only: it runs with ``python -I`` and imports nothing of nami's.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import threading
from typing import Any

MAX_STDERR = 64_000  # bytes of each stage's stderr kept


def _drain(stream: Any, into: bytearray) -> None:
    for chunk in iter(lambda: stream.read(8192), b""):
        if len(into) < MAX_STDERR:
            into.extend(chunk[:MAX_STDERR - len(into)])
    stream.close()


def _failed(code: int) -> bool:
    """Not 0, and not the SIGPIPE of a stage whose reader had stopped (also as a shell reports it, 141)."""
    return code not in (0, -signal.SIGPIPE, 128 + signal.SIGPIPE)


def run(stages: list[list[str]]) -> int:
    processes: list[subprocess.Popen[bytes]] = []
    errors: list[bytearray] = []
    drains: list[threading.Thread] = []
    upstream: Any = None  # the stdin of the next stage: the previous one's stdout (the first: ours)
    for index, argv in enumerate(stages):
        last = index == len(stages) - 1
        try:
            process = subprocess.Popen(argv, stdin=upstream, stdout=None if last else subprocess.PIPE,
                                       stderr=subprocess.PIPE)
        except OSError as exc:
            if upstream is not None:
                upstream.close()
            for started in processes:
                started.kill()
            sys.stderr.write(f"nami: pipeline stage {index + 1} ({shlex.join(argv)}) could not start: "
                             f"{exc.strerror or exc}\n")
            return 127
        if upstream is not None:
            upstream.close()  # only the stage reads it now: when it exits, the writer gets SIGPIPE
        upstream = process.stdout
        processes.append(process)
        errors.append(bytearray())
        drain = threading.Thread(target=_drain, args=(process.stderr, errors[-1]), daemon=True)
        drain.start()
        drains.append(drain)
    codes = [process.wait() for process in processes]
    for drain in drains:
        drain.join()
    failed = [index for index, code in enumerate(codes) if _failed(code)]
    for index, text in enumerate(errors):
        if text:
            if len(stages) > 1 and any(errors[i] for i in range(len(errors)) if i != index):
                sys.stderr.write(f"[stage {index + 1}: {stages[index][0]}]\n")
            sys.stderr.write(text.decode("utf-8", "replace"))
            if not text.endswith(b"\n"):
                sys.stderr.write("\n")
    if not failed:
        return 0
    index = failed[-1]
    code = codes[index]
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    sys.stderr.write(f"nami: pipeline stage {index + 1} of {len(stages)} ({shlex.join(stages[index])}) {how}\n")
    return 128 - code if code < 0 else code


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    stages = json.loads(sys.argv[2])
    sys.stderr.flush()
    code = run(stages)
    sys.stderr.flush()
    sys.exit(code)
