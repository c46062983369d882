"""What the MCP tests share: the fixture server, real ``nami mcp serve`` processes, the SDK's client over
stdio and HTTP, and waiting for processes to be gone. Import after ``tests.programs.need_mcp()``."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from nami_yaml.config.mcp_servers import McpServerSpec
from nami_yaml.mcp.client import McpServers
from nami_yaml.sandbox_settings import SandboxNeeds

FIXTURE = Path(__file__).with_name("fixture_server.py")
# The fixture reports its pids as the tests see them, from the host's /proc (a sandboxed process has pids
# of its own): where it writes a pid file, its mcp_servers entry says so.
HOST_PIDS = "sandbox: {reads: [/proc]}"
NAMI = [sys.executable, "-m", "nami_yaml"]
CLIENT = types.Implementation(name="nami-tests", version="1.0")


def fixture_command(*args: str) -> list[str]:
    return [sys.executable, str(FIXTURE), *args]


def fixture_spec(name: str = "fx", *args: str, **options: object) -> McpServerSpec:
    """The fixture server as agent.yaml would name it (``args`` are the fixture's own options). It reports
    pids from the host's /proc (see HOST_PIDS), which its sandbox shows it."""
    options.setdefault("sandbox", SandboxNeeds(reads=("/proc",)))
    return McpServerSpec(name, command=sys.executable, args=(str(FIXTURE), *args), where="agent.yaml:3:3",
                         **options)  # type: ignore[arg-type]


def servers(workdir: Path, *specs: McpServerSpec, env: dict[str, str] | None = None) -> McpServers:
    """nami's client for these servers (not started), with the model's key variable protected."""
    return McpServers(list(specs), workspace=workdir, host_env={**os.environ, **(env or {})},
                      protected_env=frozenset({"OPENAI_API_KEY"}), log_dir=workdir.parent / "logs")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for_text(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)
    return path.read_text().strip()


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@asynccontextmanager
async def stdio_session(args: list[str], cwd: Path, errlog: IO[str], *,
                        elicitation_callback: Any = None) -> AsyncIterator[ClientSession]:
    """``nami ARGS`` started by the SDK's own stdio client, initialized. ``elicitation_callback``: the client
    declares elicitation and answers with it."""
    params = StdioServerParameters(command=NAMI[0], args=[*NAMI[1:], *args], cwd=str(cwd), env=dict(os.environ))
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write, client_info=CLIENT, elicitation_callback=elicitation_callback) as session:
        await session.initialize()
        yield session


@contextmanager
def http_server(args: list[str], cwd: Path, env: dict[str, str] | None = None, *,
                host: str = "127.0.0.1") -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``nami mcp serve --http HOST:0 ARGS`` as a real process; yields its URL once it listens."""
    process = subprocess.Popen([*NAMI, "mcp", "serve", "--http", f"{host}:0", *args], cwd=cwd,
                               env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"http://\S+/mcp", line)
        assert found, line + process.stderr.read()
        yield found.group(0), process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=headers) as client, \
            streamable_http_client(url, http_client=client) as (read, write), \
            ClientSession(read, write, client_info=CLIENT) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def server_pids(pid_file: Path) -> list[tuple[int, int]]:
    """What the fixture's ``--pid-file`` says: each start's pid, and how many servers listed before it ran."""
    return [(int(pid), int(earlier)) for pid, earlier in (line.split() for line in wait_for_text(pid_file).splitlines())]


def server_pid(pid_file: Path) -> int:
    return server_pids(pid_file)[0][0]
