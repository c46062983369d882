"""Helpers the tests share: writing files, running the CLI (in-process or as a real process), and an
executor over some tool files. One copy here, imported as ``from tests.helpers import …``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from nami_yaml.cli.main import cli
from nami_yaml.policy.approval import ApprovalRequest
from nami_yaml.registry.executor import Executor
from nami_yaml.registry.loader import load_tools
from nami_yaml.registry.registry import Registry
from nami_yaml.runtime import RuntimeContext
from nami_yaml.testing import FakeOpenAIServer

NAMI = [sys.executable, "-m", "nami_yaml"]  # the CLI as a separate process, from this interpreter

# A ``pipeline:`` tool (argv stages piped without a shell), and a value of its with a terminal escape: how
# its call is shown (a dry run, the audit log, the approval question), each stage's argv, escaped.
PIPELINE_TOOL = """\
name: pick
description: The fruits whose name holds a word, sorted.
risk: read
parameters: {type: object, properties: {word: {type: string}}, required: [word]}
pipeline: [[printf, "apple\\npear\\nplum\\n"], [grep, "{word}"], [sort]]
"""
PIPELINE_WORD = "p\x1b[2J"
PIPELINE_STAGES = [["printf", "apple\npear\nplum\n"], ["grep", PIPELINE_WORD], ["sort"]]
PIPELINE_LINE = "printf 'apple\npear\nplum\n' | grep 'p\x1b[2J' | sort"  # as a shell reads it
PIPELINE_SHOWN = "printf 'apple\\npear\\nplum\\n' | grep 'p\\x1b[2J' | sort"  # as printed, escaped


def write(path: Path, text: str) -> Path:
    """``text`` into ``path``, its folders created; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def fake_programs(folder: Path, *names: str) -> str:
    """Executables ``names`` (doing nothing) in ``folder``; returns a PATH of that folder alone."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        write(folder / name, "#!/bin/sh\n").chmod(0o755)
    return f"{folder}{os.pathsep}/nonexistent"


def programs_on_path(folder: Path, *names: str) -> str:
    """The PATH with executables ``names`` (doing nothing) in ``folder`` first: for a test whose output
    names what a missing program would change (`nami check`'s "not found on PATH"), on machines without it."""
    return f"{fake_programs(folder, *names).split(os.pathsep)[0]}{os.pathsep}{os.environ.get('PATH', '')}"


def without_sandbox_notice(text: str) -> str:
    """Output as it is where the sandbox works: the notice a run gives once where bubblewrap cannot
    (nami_yaml/runners/sandbox/notice.py) taken out, so a test of other output holds on both machines."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(SANDBOX_NOTICE))


SANDBOX_NOTICE = "nami: tools run without a sandbox here: "


def nami(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """The CLI in this process (click's runner): exit code and output, a bug's exception raised as is."""
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def run_nami(server: FakeOpenAIServer | None, *args: str, cwd: Path, stdin: str | bytes = "",
             env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process in ``cwd``, talking to ``server`` (as $NAMI_BASE_URL) when given."""
    full_env = dict(os.environ)
    if server is not None:
        full_env["NAMI_BASE_URL"] = server.base_url
    full_env.update(env or {})
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run([*NAMI, *args], cwd=cwd, env=full_env, input=data, capture_output=True, timeout=timeout)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def executor(ctx: RuntimeContext, files: Sequence[Path], *, builtin: Sequence[Path] = ()) -> Executor:
    """An executor over the tools of ``files`` (``builtin``: those of them that are built-ins), which must
    load without a problem."""
    tools, problems = load_tools(list(files), builtin=list(builtin))
    assert problems == [], problems
    return Executor(Registry(tools), ctx)


def tool_executor(ctx: RuntimeContext, text: str) -> Executor:
    """An executor over one tool file of ``text``, written beside the workspace."""
    return executor(ctx, [write(ctx.workspace.parent / "tools" / "tool.yaml", text)])


def json_span(raw: bytes, key: bytes) -> bytes:
    """The exact bytes of the JSON value under a top-level key (``b'"tools"'``) of a request body as sent."""
    text = raw.decode()
    start = text.index(key.decode()) + len(key)
    start = text.index(":", start) + 1
    while text[start] in " \t\r\n":
        start += 1
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end].encode()


# A tool that runs on the project's targets (`target: true`), for tests of rules and replays on targets. It only
# echoes the command it stands for; api_token is there to be redacted in the audit log.
KUBECTL_ON_TARGETS = """\
name: kubectl_change
description: Change resources.
risk: exec
target: true
parameters:
  type: object
  properties:
    verb: {type: string, enum: [apply, delete]}
    resource: {type: string}
    api_token: {type: string, default: none}
  required: [verb, resource]
command: [echo, kubectl, --context, "{target.context}", "{verb}", "{resource}", "--token={api_token}"]
"""


def pytest_without(tmp_path: Path, required: str, test_file: str, case: str, programs: tuple[str, ...] = (),
                   **env: str) -> subprocess.CompletedProcess[str]:
    """One case of ``test_file`` run by pytest in a child whose PATH holds only ``programs`` (linked from
    /bin), with CI's ``required`` variable (NAMI_REQUIRE_RG, …) unset unless ``env`` sets it again."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in programs:
        (folder / program).symlink_to(os.path.realpath(f"/bin/{program}"))
    inherited = {k: v for k, v in os.environ.items() if k != required}  # CI sets it for its own run
    # -n 0: one case needs no xdist workers (the project's addopts, -n auto, would start several).
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rs", "-k", case,
                           test_file],
                          cwd=Path(__file__).resolve().parents[1], env={**inherited, "PATH": str(folder), **env},
                          capture_output=True, text=True, timeout=300)


# A command tool that prints a line, then sleeps as long as it is told: a tool to interrupt.
SLEEPER_TOOL = """\
name: sleeper
description: Says it started, then sleeps.
risk: read
parameters: {type: object, properties: {seconds: {type: string}}, required: [seconds]}
command: [sh, -c, 'echo started; exec sleep "$1"', sh, "{seconds}"]
"""


SLEEPER_PYTHON = """\
import subprocess


def sleeper(seconds: str) -> str:
    subprocess.run(["sleep", seconds])
    return "slept"
"""


def script_a_sleep(server: FakeOpenAIServer, tool: str, seconds: str, workdir: Path) -> list[str]:
    """Script a model that runs `sleep SECONDS` (then would answer): through the bash built-in, the
    ``sleeper`` command tool, or ``python``: a tool file's Python entry point that runs it (in its child
    process where the sandbox is on); each of them, running alone, runs on the loop's own thread.
    Returns the `nami run` options that load the tool."""
    from nami_yaml.testing import call, text, tool_calls

    if tool == "bash":
        server.add(tool_calls(call("bash", {"command": f"echo started; sleep {seconds}"})), text("never"))
        return []
    if tool == "python":
        (workdir / "sleeper_py.py").write_text(SLEEPER_PYTHON)
        (workdir / "sleeper.yaml").write_text(SLEEPER_TOOL.replace(SLEEPER_TOOL.splitlines()[-1],
                                                                   "entrypoint: sleeper_py:sleeper"))
        server.add(tool_calls(call("sleeper", {"seconds": seconds})), text("never"))
        return ["--tools", "sleeper.yaml"]
    (workdir / "sleeper.yaml").write_text(SLEEPER_TOOL)
    server.add(tool_calls(call("sleeper", {"seconds": seconds})), text("never"))
    return ["--tools", "sleeper.yaml"]


class Answering:
    """An approver that gives the same answer to every question, noting each (tests of what is asked)."""

    def __init__(self, answer: bool = True):
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return self.answer
