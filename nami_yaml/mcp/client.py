"""MCP servers as tool sources: the connections to the servers agent.yaml names, owned by one object.

:class:`McpServers` runs an asyncio event loop in a background thread of its own (the SDK's client is
async, nami's loop and tools are threads). It starts every server in parallel, lists their tools, turns
them into registry tools (``server__tool``), carries the calls, and stops every server when closed, or when
nami exits however it exits short of SIGKILL (an ``atexit`` hook; Ctrl-C included).

A server that fails to start, does not answer in time or dies later is reported once (:meth:`take_notices`)
and its tools answer with an error: the agent goes on without them.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from anyio.from_thread import BlockingPortal
from jsonschema import Draft202012Validator, SchemaError
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from nami_yaml.cancel import CancelToken
from nami_yaml.config.mcp_servers import SEPARATOR, McpConfigError, McpServerSpec, expand
from nami_yaml.display import visible
from nami_yaml.env_secrets import EnvScrub, child_environment
from nami_yaml.mcp.oauth import login_hint, run_auth
from nami_yaml.mcp.results import result_text
from nami_yaml.mcp.stdio import keep_stderr, process_streams
from nami_yaml.mcp.subscriptions import ChangeListener, listen_needed, negotiate
from nami_yaml.registry.defaults import NOT_APPLIED, refused_defaults
from nami_yaml.registry.ref_cycles import ref_problems
from nami_yaml.registry.tool import Tool
from nami_yaml.runners.mcp import McpReply, McpRunner
from nami_yaml.runners.process import exit_status, start_server, stop_server
from nami_yaml.runners.sandbox.failure import classify_failure
from nami_yaml.runners.sandbox.plan import KIND_SERVER, SandboxPlan, named_paths, plan_for
from nami_yaml.runners.vetting import CodeVetting
from nami_yaml.runtime import RuntimeContext
from nami_yaml.spec.yamlpos import format_path
from nami_yaml.version import __version__

CLIENT_INFO = types.Implementation(name="nami", version=__version__)
STOP_GRACE = 2.0  # after its stdin closes, how long a server may take to exit before its group is killed
CANCEL_GRACE = 2.0  # after a call is cancelled, how long to wait for the server's side to settle
_POLL = 0.1
EXIT_POLL = 0.2  # how often a stdio server is checked for having exited
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_LOG_BYTES = 1_000_000  # of a server's stderr, each time it starts; the rest is read and dropped
LOG_CATCH_UP = 0.5  # how long a dead server's last stderr may take to reach its log
MAX_TOOLS = 1000  # one server's tools; more would flood the model's context (and nami's memory)
# Every request carries every tool's description and schema: a server must not make each one megabytes long.
MAX_DESCRIPTION = 4_000  # characters; a longer description is cut
MAX_SCHEMA = 32_000  # characters of the inputSchema as JSON; a larger one leaves the tool out
READ_RESOURCE = "read_resource"  # the tool nami adds for a server's resources: SERVER__read_resource
MAX_LISTED = 200  # resources or prompts of one server kept from its first page
LOG_LEVEL = "info"  # the least a server's log message must be to be sent (shown with -v)
# RFC 5424's order, MCP's levels: a server on an older protocol sends every level, and those below LOG_LEVEL
# are dropped here.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
MAX_LOG_MESSAGE = 2_000  # characters of one log message shown
MAX_UNHEARD = 100  # -v notices kept until someone listens (those of the servers' start)


@dataclass
class Connection:
    spec: McpServerSpec
    state: str = "starting"  # starting | ready | failed | stopped | died
    problem: str | None = None
    listed: list[types.Tool] = field(default_factory=list)
    resources: list[types.Resource] | None = None  # the first page; None: the server has no resources
    more_resources: bool = False
    prompts: list[types.Prompt] = field(default_factory=list)
    session: ClientSession | None = None
    process: Any = None  # the Popen of a stdio server
    log_path: Path | None = None
    stderr_copy: threading.Thread | None = None  # copies its stderr into its log
    sandbox: SandboxPlan | None = None  # the sandbox its process runs in
    stopping: bool = False
    started: threading.Event = field(default_factory=threading.Event)  # ready or failed
    finished: threading.Event = field(default_factory=threading.Event)
    stop: anyio.Event | None = None
    oauth: Any = None  # nami_yaml.mcp.oauth.NamiOAuth of an HTTP server: its stored login, if any
    tasks: Any = None  # an anyio TaskGroup living as long as its session
    resources_changed: bool = False  # the list changed since the read tool's description was written
    protocol: str | None = None  # the protocol version agreed on
    listener: ChangeListener | None = None  # its subscriptions/listen stream (2026-07-28), if one is open


@dataclass
class _Exited:
    exit_code: int | None
    stderr: str


class McpServers:
    """The MCP servers of one project: started together, stopped together. Implements the runners'
    McpCaller."""

    def __init__(self, specs: list[McpServerSpec], *, workspace: Path, host_env: Mapping[str, str],
                 protected_env: frozenset[str], log_dir: Path, scrub: EnvScrub | None = None,
                 vetting: Mapping[str, CodeVetting] | None = None, context: RuntimeContext | None = None):
        self.connections = {spec.name: Connection(spec) for spec in specs}
        # Whose sandbox settings the servers' plans start from (the project's RuntimeContext); without
        # one, the defaults: sandboxed where bubblewrap works, each server with its own ``sandbox:``.
        self.context = context or RuntimeContext(workspace=workspace, host_env=dict(host_env),
                                                 protected_env=protected_env)
        self.workspace = workspace
        self.host_env = dict(host_env)
        self.protected_env = protected_env
        self.scrub = scrub  # the env_scrub patterns tools' environments are scrubbed with
        self.log_dir = log_dir
        self.vetting = dict(vetting or {})  # a project server's trusted code: its imports are checked as it runs
        self._notices: list[str] = []
        self._manifests: Path | None = None
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # Told each log message a server sends (notifications/message): server, level, text (redacted).
        self._on_log: Callable[[str, str, str], None] | None = None
        self._unheard: list[tuple[str, str, str]] = []  # nami's -v notices told before anyone listened
        self._secrets: list[str] | None = None

    # -- starting ---------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every server at once and wait until each is ready or has failed (its startup_timeout)."""
        if not self.connections or self._thread is not None:
            return
        ready = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(ready,), name="nami-mcp", daemon=True)
        self._thread.start()
        ready.wait()
        atexit.register(self.close)
        assert self._portal is not None
        for conn in self.connections.values():
            self._portal.start_task_soon(self._serve, conn)
        deadline = time.monotonic() + max(c.spec.startup_timeout for c in self.connections.values()) + 5
        for conn in self.connections.values():
            if not conn.started.wait(max(0.0, deadline - time.monotonic())):
                self._fail(conn, "no answer at all")

    def _loop(self, ready: threading.Event) -> None:
        async def main() -> None:
            async with BlockingPortal() as portal:
                self._portal = portal
                ready.set()
                await portal.sleep_until_stopped()

        anyio.run(main)

    async def _serve(self, conn: Connection) -> None:
        """One server's life: start, agree on a protocol, list its tools (and listen for changes), then wait until
        told to stop."""
        conn.stop = anyio.Event()
        spec = conn.spec
        try:
            async with AsyncExitStack() as stack:
                try:
                    read, write = await stack.enter_async_context(self._transport(conn))
                    # Work the server's notifications start (listing its changed resources), ended with it.
                    conn.tasks = await stack.enter_async_context(anyio.create_task_group())
                    session = await stack.enter_async_context(ClientSession(
                        read, write, client_info=CLIENT_INFO, logging_callback=self._log_callback(conn),
                        message_handler=self._message_handler(conn), log_level=LOG_LEVEL))
                    # However the connection ends, its listen stream ends first (before the session closes).
                    stack.callback(lambda: conn.listener and conn.listener.cancel())
                    with anyio.fail_after(spec.startup_timeout):
                        await negotiate(session)
                        conn.protocol = session.protocol_version
                        capabilities = session.server_capabilities
                        conn.listed = await _all_tools(session)
                        await self._listen(conn, session, capabilities)  # before listing what it follows
                        await self._list_extras(conn, session, capabilities)
                except Exception as exc:  # whatever the server or the network did: a notice, never a crash
                    self._fail(conn, self._startup_problem(conn, exc))
                    return  # the stack stops what was started, while nami goes on
                conn.session = session
                conn.state = "ready"
                if conn.listener is not None:
                    conn.listener.listed.set()
                conn.started.set()
                await conn.stop.wait()
                if conn.listener is not None:  # closed while the server is there to be told
                    await conn.listener.close(CANCEL_GRACE)
        except Exception as exc:
            self._fail(conn, self._startup_problem(conn, exc))
        finally:
            if conn.state == "ready":
                conn.state = "died" if not conn.stopping else "stopped"
            conn.started.set()
            conn.finished.set()

    async def _listen(self, conn: Connection, session: ClientSession, capabilities: Any) -> None:
        """On 2026-07-28, open the server's subscriptions/listen stream for resource list changes (on older
        protocols the server sends them unasked: :meth:`_message_handler`). A server that does not offer it
        or refuses it: a -v notice, and the read tool's list stays as it was listed at start."""
        resources = getattr(capabilities, "resources", None)
        if not listen_needed(session) or resources is None:
            return
        if not resources.list_changed:
            self._verbose(conn, "it announces no resource list changes (its capabilities: resources.listChanged "
                                "is off); the read tool's list is the one of its start")
            return
        conn.listener = ChangeListener(session, timeout=conn.spec.startup_timeout,
                                       changed=lambda: self._relist_resources(conn),
                                       tell=lambda text: self._verbose(conn, text),
                                       running=lambda: conn.state in ("starting", "ready") and not conn.stopping)
        await conn.tasks.start(conn.listener.run)

    async def _list_extras(self, conn: Connection, session: ClientSession, capabilities: Any) -> None:
        """A server's resources (the first page: what the read tool's description lists) and prompts (what
        chat offers as /SERVER:PROMPT). A server that fails to list them keeps its tools."""
        try:
            if getattr(capabilities, "resources", None) is not None:
                page = await session.list_resources()
                conn.resources = list(page.resources[:MAX_LISTED])
                conn.more_resources = bool(page.next_cursor) or len(page.resources) > MAX_LISTED
            if getattr(capabilities, "prompts", None) is not None:
                conn.prompts = list((await session.list_prompts()).prompts[:MAX_LISTED])
        except Exception as exc:  # listing is extra: a notice, and the server's tools stay
            self._notice(f"MCP server {conn.spec.name}: its resources or prompts could not be listed: {_describe(exc)}")

    @property
    def on_log(self) -> Callable[[str, str, str], None] | None:
        return self._on_log

    @on_log.setter
    def on_log(self, sink: Callable[[str, str, str], None] | None) -> None:
        """Whoever listens from now on is told first what nami told before (the servers' start)."""
        with self._lock:
            self._on_log = sink
            unheard, self._unheard = (self._unheard, []) if sink is not None else ([], self._unheard)
        for message in unheard:
            sink(*message)  # type: ignore[misc]

    def _verbose(self, conn: Connection, text: str) -> None:
        """A notice of nami's about a server that is shown with -v (with the server's own log messages): how
        it works, not what fails."""
        message = (conn.spec.name, "notice", visible(f"(nami) {text}"))
        with self._lock:
            sink = self._on_log
            if sink is None:
                if len(self._unheard) < MAX_UNHEARD:
                    self._unheard.append(message)
                return
        sink(*message)

    def _log_callback(self, conn: Connection) -> Callable[[Any], Awaitable[None]]:
        async def logged(params: types.LoggingMessageNotificationParams) -> None:
            sink = self.on_log
            level = str(params.level)
            if sink is None or (level in LOG_LEVELS and LOG_LEVELS.index(level) < LOG_LEVELS.index(LOG_LEVEL)):
                return
            text = self._redacted(params.data)
            if params.logger:
                text = f"{params.logger}: {text}"
            if len(text) > MAX_LOG_MESSAGE:
                text = text[:MAX_LOG_MESSAGE] + f"… [{len(text) - MAX_LOG_MESSAGE:,} more characters]"
            sink(conn.spec.name, level, visible(text))

        return logged

    def _redacted(self, data: Any) -> str:
        """A log message's data as text, redacted as the audit log redacts: values of secret-looking keys,
        and the values of nami's secret-looking variables wherever they appear."""
        from nami_yaml.policy.audit import host_secrets, redact, scrub_text

        if self._secrets is None:
            self._secrets = host_secrets()
        text = data if isinstance(data, str) else json.dumps(redact(data), ensure_ascii=False, default=str)
        return scrub_text(text, self._secrets)

    def _message_handler(self, conn: Connection) -> Callable[[Any], Awaitable[None]]:
        async def handle(message: Any) -> None:
            # On 2026-07-28 these come on the listen stream, whose listener lists again (the SDK hands them
            # here too): the handler is for older protocols.
            if conn.listener is not None:
                return
            if isinstance(message, types.ResourceListChangedNotification | types.ResourceUpdatedNotification) \
                    and conn.resources is not None and conn.tasks is not None:
                # Listed again on a task of its own: this handler runs on the session's reading task.
                conn.tasks.start_soon(self._relist_resources, conn)

        return handle

    async def _relist_resources(self, conn: Connection) -> None:
        """The server said its resources changed: list them again (what the read tool's next answer says)."""
        session = conn.session
        if session is None or conn.state != "ready":
            return
        try:
            with anyio.fail_after(conn.spec.startup_timeout):
                page = await session.list_resources()
        except Exception as exc:
            if conn.state == "ready" and not conn.stopping:
                self._notice(f"MCP server {conn.spec.name}: its changed resources could not be listed: "
                             f"{_describe(exc)}")
            return
        conn.resources = list(page.resources[:MAX_LISTED])
        conn.more_resources = bool(page.next_cursor) or len(page.resources) > MAX_LISTED
        conn.resources_changed = True

    def _startup_problem(self, conn: Connection, exc: BaseException) -> str:
        spec = conn.spec
        exc = _innermost(exc)
        if isinstance(exc, TimeoutError):
            return f"no answer within {spec.startup_timeout:g} s (startup_timeout)"
        if isinstance(exc, McpConfigError):
            return str(exc)
        if _needs_login(conn):
            return f"it asks for an OAuth login: {login_hint(spec.name)}"
        if isinstance(exc, FileNotFoundError) and conn.process is None:
            return f"command not found: {spec.command}"
        if isinstance(exc, PermissionError) and conn.process is None and conn.sandbox is not None \
                and conn.sandbox.refusal:
            return conn.sandbox.refusal
        code = exit_status(conn.process) if conn.process is not None else None
        if code is None:
            return _describe(exc)
        return f"it exited with code {code} before it answered" + self._sandbox_note(conn, code)

    def _sandbox_note(self, conn: Connection, code: int) -> str:
        """The sandbox's part in a server's early exit, from the end of its log (as a tool's result says)."""
        if conn.sandbox is None or conn.log_path is None:
            return ""
        if conn.stderr_copy is not None:
            conn.stderr_copy.join(LOG_CATCH_UP)
        try:
            with open(conn.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 8192))
                tail = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        found = classify_failure(conn.sandbox, _Exited(code, tail))
        return f" {found.note}" if found is not None else ""

    @asynccontextmanager
    async def _transport(self, conn: Connection) -> AsyncIterator[Any]:
        spec = conn.spec
        if spec.url:
            headers = {key: expand(value, self.host_env, self.protected_env) for key, value in spec.headers.items()}
            if not any(key.lower() == "authorization" for key in headers):  # a token given in headers: not ours
                conn.oauth = run_auth(spec.url)
            client = create_mcp_http_client(headers=headers, auth=conn.oauth)
            client.event_hooks = {"request": [_trace_header]}
            async with client, streamable_http_client(spec.url, http_client=client) as streams:
                yield streams
            return
        env = child_environment(self.host_env, protected=self.protected_env, scrub=self.scrub, extra={
            key: expand(value, self.host_env, self.protected_env) for key, value in spec.env.items()})
        folder = spec.working_folder(self.workspace)
        if not folder.is_dir():
            raise McpConfigError(f"its cwd {folder} is not a folder")
        log = self._open_log(conn)
        try:
            argv = [spec.command or "", *spec.args]
            # The files its command line names, where the sandbox's private /tmp would hide them (a server
            # installed under /tmp, a checkout there): shown read-only.
            visible = named_paths(argv)
            if spec.name in self.vetting:
                # The manifest of the code trusted, where the server's sandbox shows it (nami's own folders
                # are hidden there): a private folder of its own under /tmp.
                manifest = self._manifest_folder() / f"{spec.name}.code.json"
                argv = self.vetting[spec.name].launch(argv, manifest)
                visible.append(manifest.parent)
            conn.sandbox = plan_for(self.context, spec.sandbox, kind=KIND_SERVER, visible=visible)
            conn.process = start_server(argv, folder, env, subprocess.PIPE, sandbox=conn.sandbox)
        except BaseException:
            log.close()
            raise
        # It closes the log when the server is gone.
        conn.stderr_copy = keep_stderr(conn.process.stderr, log, MAX_LOG_BYTES)  # type: ignore[arg-type]
        try:
            async with process_streams(conn.process, lambda: self._server_ended(conn)) as streams, \
                    anyio.create_task_group() as watch:
                # Its exit, even while a child it left behind still holds its stdout open.
                watch.start_soon(self._watch_exit, conn)
                try:
                    yield streams
                finally:
                    watch.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(stop_server, conn.process, STOP_GRACE)

    def _open_log(self, conn: Connection) -> BinaryIO:
        """The server's stderr goes to a log file of its own (:func:`keep_stderr`: at most MAX_LOG_BYTES
        a start), so it neither mixes with nami's output nor blocks on a full pipe."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # a server may log what it was given: the folder is private
            os.chmod(self.log_dir, 0o700)
        path = conn.log_path = self.log_dir / f"{conn.spec.name}.log"
        with contextlib.suppress(OSError):
            if path.stat().st_size > MAX_LOG_BYTES:
                path.replace(path.with_suffix(".log.1"))
        handle = os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600), "ab")
        handle.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} nami {os.getpid()} starts "
                     f"{conn.spec.endpoint()}\n".encode())
        handle.flush()
        return handle

    async def _watch_exit(self, conn: Connection) -> None:
        while conn.process is not None and exit_status(conn.process) is None:
            await anyio.sleep(EXIT_POLL)
        await self._server_ended(conn)

    async def _server_ended(self, conn: Connection) -> None:
        """The server closed its stdout or exited: unless we are stopping it, it died. Stop what is left."""
        if conn.stopping or conn.state != "ready":
            return
        conn.state = "died"
        code = None
        for _ in range(20):  # it closed stdout as it exited: its exit code is a moment away
            if conn.process is None or (code := exit_status(conn.process)) is not None:
                break
            await anyio.sleep(0.025)
        conn.problem = f"stopped (exit code {code})" if code is not None else "stopped"
        self._notice(f"MCP server {conn.spec.name} {conn.problem}; its tools are unavailable from now on."
                     f"{self._log_hint(conn)}")
        if conn.stop is not None:
            conn.stop.set()

    def _fail(self, conn: Connection, why: str) -> None:
        if conn.state in ("failed", "died"):
            return
        conn.state, conn.problem = "failed", f"did not start: {why}"
        self._notice(f"MCP server {conn.spec.name} ({conn.spec.where}) did not start: {why}. Going on without "
                     f"its tools.{self._log_hint(conn)}")
        conn.started.set()

    def _log_hint(self, conn: Connection) -> str:
        if conn.stderr_copy is not None and conn.process is not None and exit_status(conn.process) is not None:
            conn.stderr_copy.join(LOG_CATCH_UP)  # its last words, still in the pipe, are the ones that matter
        tail = _log_tail(conn.log_path) if conn.log_path else ""
        if not tail:
            return ""
        return f" Its log ({conn.log_path}) ends with:\n{tail}"

    def _notice(self, message: str) -> None:
        with self._lock:
            self._notices.append(message)

    def take_notices(self) -> list[str]:
        """What went wrong since last asked (each problem once)."""
        with self._lock:
            notices, self._notices = self._notices, []
        return notices

    # -- tools ------------------------------------------------------------------------------------------

    def tools(self, default_timeout: float | None = None) -> list[Tool]:
        """The registry tools of the servers that started, after enabled_tools / disabled_tools."""
        tools: list[Tool] = []
        for conn in self.connections.values():
            if conn.state != "ready":
                continue
            spec = conn.spec
            names: set[str] = set()
            for listed in conn.listed:
                if not spec.offers(listed.name):
                    continue
                tool = self._tool(conn, listed, names)
                if tool is not None:
                    names.add(tool.name)
                    tools.append(tool)
            if conn.resources is not None and spec.offers(READ_RESOURCE):
                tool = self._resource_tool(conn, names)
                if tool is not None:
                    names.add(tool.name)
                    tools.append(tool)
            offered = {t.name for t in conn.listed} | ({READ_RESOURCE} if conn.resources is not None else set())
            missing = [name for name in spec.enabled_tools or () if name not in offered]
            if missing:
                self._notice(f"MCP server {spec.name} has no tool {', '.join(map(repr, missing))} "
                             f"(enabled_tools, {spec.where})")
        return tools

    def _tool(self, conn: Connection, listed: types.Tool, taken: set[str]) -> Tool | None:
        spec = conn.spec
        name = tool_name(spec.name, listed.name)
        schema = listed.input_schema
        problem = None
        if name in taken:
            problem = f"its name is {name} once made safe, like another of its tools"
        elif not isinstance(schema, dict) or schema.get("type") != "object":
            problem = "its inputSchema is not an object schema"
        elif (size := len(json.dumps(schema))) > MAX_SCHEMA:
            problem = f"its inputSchema is {size:,} characters as JSON (at most {MAX_SCHEMA:,}: it goes with every request)"
        else:
            try:
                Draft202012Validator.check_schema(schema)
                refs = ref_problems(schema)
                if refs:
                    problem = f"its inputSchema cannot be used: {format_path(refs[0][0])}: {refs[0][1]}"
            except SchemaError as exc:
                problem = f"its inputSchema is not a valid JSON Schema: {exc.message}"
        if problem is not None:
            self._notice(f"MCP server {spec.name}: tool {visible(listed.name)!r} left out: {problem}")
            return None
        for where, message in refused_defaults(schema):  # documentation of the server's: not applied by nami
            self._notice(f"MCP server {spec.name}: tool {visible(listed.name)!r}: {format_path(('inputSchema', *where))}: "
                         f"warning: {message}; {NOT_APPLIED}")
        read_only = bool(listed.annotations and listed.annotations.read_only_hint)
        runner = McpRunner(spec.name, listed.name, self, spec.endpoint(), spec.tool_timeout)
        description = listed.description or listed.title or f"{listed.name} (MCP server {spec.name})"
        if len(description) > MAX_DESCRIPTION:
            self._notice(f"MCP server {spec.name}: the description of {name} was cut to {MAX_DESCRIPTION:,} of its "
                         f"{len(description):,} characters (it goes with every request)")
            description = description[:MAX_DESCRIPTION] + "…"
        return Tool(name=name, description=description, parameters=schema, risk="read" if read_only else "exec",
                    runner=runner, source=spec.where)

    def _resource_tool(self, conn: Connection, taken: set[str]) -> Tool | None:
        """One tool per server with resources: read one by its uri, or list them (paginated)."""
        spec = conn.spec
        name = tool_name(spec.name, READ_RESOURCE)
        if name in taken:
            self._notice(f"MCP server {spec.name}: its resources are not offered: it has a tool named {name} already")
            return None
        lines = [f"- {visible(r.uri)}: {visible(r.name)}" + (f" ({visible(r.mime_type)})" if r.mime_type else "")
                 + (f": {visible(r.description)[:200]}" if r.description else "") for r in conn.resources or ()]
        head = (f"Read a resource of MCP server {spec.name} by its uri. Without uri: list its resources "
                "(cursor: the next page).")
        listing = "\n".join(lines)
        if conn.more_resources:
            listing += "\n- ... and more: call without uri to list them"
        description = f"{head}\nResources:\n{listing}" if lines else head
        if len(description) > MAX_DESCRIPTION:
            description = description[:MAX_DESCRIPTION] + "…\n(cut: call without uri to list them all)"
        schema = {"type": "object", "properties": {
            "uri": {"type": "string", "description": "The resource's uri, as listed."},
            "cursor": {"type": "string", "description": "For the list: the page after this cursor."}}}
        runner = McpRunner(spec.name, READ_RESOURCE, self, spec.endpoint(), spec.tool_timeout, action="read_resource")
        return Tool(name=name, description=description, parameters=schema, risk="read", runner=runner,
                    source=spec.where)

    def prompts(self) -> dict[str, types.Prompt]:
        """Each running server's prompts, by the name chat offers them under: SERVER:PROMPT."""
        return {f"{conn.spec.name}:{prompt.name}": prompt for conn in self.connections.values()
                if conn.state == "ready" for prompt in conn.prompts}

    def get_prompt(self, server: str, name: str, arguments: dict[str, str], *, timeout: float = 30.0) -> McpReply:
        """The prompt's messages as one text (what chat sends as the person's message); never raises."""

        async def fetch(conn: Connection, args: dict[str, Any], seconds: float) -> McpReply:
            assert conn.session is not None
            try:
                with anyio.fail_after(seconds):
                    result = await conn.session.get_prompt(name, args)
            except TimeoutError:
                return McpReply(f"[timed out after {seconds:g} s]", ok=False, timed_out=True)
            except MCPError as exc:
                return self._login_reply(conn) or McpReply(f"Error: MCP server {server}: prompt {name}: {exc.message}",
                                                           ok=False)
            texts = [visible(message.content.text) for message in getattr(result, "messages", [])
                     if getattr(message.content, "type", None) == "text"]
            return McpReply("\n\n".join(texts))

        return self._on_server(server, fetch, dict(arguments), timeout, CancelToken())

    def read_resource(self, server: str, arguments: dict[str, Any], *, timeout: float,
                      cancel: CancelToken) -> McpReply:
        return self._on_server(server, self._read_resource, arguments, timeout, cancel)

    async def _read_resource(self, conn: Connection, arguments: dict[str, Any], timeout: float) -> McpReply:
        assert conn.session is not None
        uri = arguments.get("uri")
        try:
            with anyio.fail_after(timeout):
                if not uri:
                    params = types.PaginatedRequestParams(cursor=arguments["cursor"]) if arguments.get("cursor") else None
                    page = await conn.session.list_resources(params=params)
                    lines = [f"{r.uri}\t{r.name}" + (f"\t{r.mime_type}" if r.mime_type else "") for r in page.resources]
                    if page.next_cursor:
                        lines.append(f"(more: call again with cursor {json.dumps(page.next_cursor)})")
                    conn.resources_changed = False  # the list it reads now is the changed one
                    return McpReply(visible("\n".join(lines)) or "(no resources)")
                result = await conn.session.read_resource(str(uri))
        except TimeoutError:
            return McpReply(f"[timed out after {timeout:g} s reading from MCP server {conn.spec.name}]", ok=False,
                            timed_out=True)
        except MCPError as exc:
            return self._login_reply(conn) or McpReply(f"Error: MCP server {conn.spec.name}: {exc.message}", ok=False)
        parts = []
        for content in getattr(result, "contents", []):
            text = getattr(content, "text", None)
            if text is not None:
                parts.append(visible(text))
            else:  # a blob: what it is, not megabytes of base64
                parts.append(f"[binary resource {content.uri}: {content.mime_type or 'no type'}, "
                             f"{len(getattr(content, 'blob', '')) * 3 // 4:,} bytes]")
        return McpReply(("\n".join(parts) or "(empty resource)") + self._changed_note(conn))

    def _changed_note(self, conn: Connection) -> str:
        """Once after the server said its resources changed: what they are now (the tool's description,
        sent with every request, stays as it was, so prompt caches hold)."""
        if not conn.resources_changed:
            return ""
        conn.resources_changed = False
        now = ", ".join(visible(r.uri) for r in conn.resources or ()) or "none"
        more = " and more (call without uri to list them)" if conn.more_resources else ""
        return f"\n[the server's resources changed since this tool was described; they are now: {now}{more}]"

    # -- calls ------------------------------------------------------------------------------------------

    def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *, timeout: float,
                  cancel: CancelToken, trace: Mapping[str, str] | None = None,
                  progress: Callable[[str], None] | None = None) -> McpReply:
        return self._on_server(server, lambda conn, args, seconds: self._call(conn, tool, args, seconds, trace,
                                                                              progress),
                               arguments, timeout, cancel)

    def _on_server(self, server: str, work: Callable[[Connection, dict[str, Any], float], Awaitable[McpReply]],
                   arguments: dict[str, Any], timeout: float, cancel: CancelToken) -> McpReply:
        """Run ``work`` on the server's loop; cancelled on the server once ``cancel`` is set. Never raises."""
        conn = self.connections.get(server)
        if conn is None or conn.state != "ready" or conn.session is None or self._portal is None:
            why = conn.problem if conn is not None and conn.problem else "it is not running"
            return McpReply(f"Error: MCP server {server} is unavailable ({why}); its tools cannot be used now.",
                            ok=False, unavailable=True)
        if cancel.is_set():
            return McpReply("[interrupted before it started]", ok=False, interrupted=True)
        try:
            future = self._portal.start_task_soon(work, conn, arguments, timeout)
        except RuntimeError:  # the loop is shutting down
            return McpReply(f"Error: MCP server {server} is being stopped", ok=False, unavailable=True)
        while not future.done():
            if cancel.wait(_POLL):
                future.cancel()  # cancels the request: the SDK sends notifications/cancelled to the server
                concurrent.futures.wait([future], timeout=CANCEL_GRACE)
                return McpReply("[interrupted; the call was cancelled on the server]", ok=False, interrupted=True)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            return McpReply("[interrupted; the call was cancelled on the server]", ok=False, interrupted=True)
        except Exception as exc:
            return McpReply(f"Error: MCP server {server}: {_describe(exc)}", ok=False)

    async def _call(self, conn: Connection, tool: str, arguments: dict[str, Any], timeout: float,
                    trace: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None) -> McpReply:
        assert conn.session is not None
        name = conn.spec.name
        # A traced call's context goes in the request's _meta (MCP's place for it, any transport); over HTTP
        # also as the traceparent header (see _trace_header), which proxies and HTTP servers read.
        meta: Any = {key: trace[key] for key in TRACE_KEYS if trace.get(key)} if trace else None
        try:
            with anyio.fail_after(timeout):
                result = await conn.session.call_tool(tool, arguments, meta=meta or None,
                                                      progress_callback=_progress_callback(progress))
        except TimeoutError:
            return McpReply(f"[timed out after {timeout:g} s; the call was cancelled on MCP server {name}]",
                            ok=False, timed_out=True)
        except MCPError as exc:
            if conn.state != "ready":
                return McpReply(f"Error: MCP server {name} {conn.problem or 'stopped'} during this call; its "
                                "tools are unavailable now.", ok=False, unavailable=True)
            return self._login_reply(conn) or McpReply(f"Error: MCP server {name}: {exc.message}", ok=False)
        if not isinstance(result, types.CallToolResult):
            return McpReply(f"Error: MCP server {name} answered with a {type(result).__name__}, not a tool result",
                            ok=False)
        return McpReply(result_text(result), ok=not result.is_error)

    def _login_reply(self, conn: Connection) -> McpReply | None:
        """A request the server refused (HTTP 401) that the stored login could not answer, even refreshed:
        the person must log in again. Said once as a notice too (the model may not pass it on)."""
        if not _needs_login(conn):
            return None
        name = conn.spec.name
        if not conn.oauth.login_told:
            conn.oauth.login_told = True
            self._notice(f"MCP server {name} refused nami's login (HTTP 401): {login_hint(name)}, then run again")
        return McpReply(f"Error: MCP server {name} refused the request: it needs an OAuth login that nami does not "
                        f"have or that expired. The user must {login_hint(name)}; its tools cannot be used until "
                        "then.", ok=False)

    # -- stopping ---------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every server (stdin closed, a grace, then its process group killed) and the loop. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        portal = self._portal
        if portal is not None:
            for conn in self.connections.values():
                conn.stopping = True
                if conn.stop is not None:
                    with contextlib.suppress(Exception):
                        portal.call(conn.stop.set)
            deadline = time.monotonic() + STOP_GRACE + 8
            for conn in self.connections.values():
                conn.finished.wait(max(0.0, deadline - time.monotonic()))
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
        if self._thread is not None:
            self._thread.join(timeout=5)
        for conn in self.connections.values():  # whatever the loop could not stop in time
            if conn.process is not None and conn.process.returncode is None:
                stop_server(conn.process, 0)
        if self._manifests is not None:
            shutil.rmtree(self._manifests, ignore_errors=True)

    def _manifest_folder(self) -> Path:
        """A private folder (0o700) for the manifests of the servers' trusted code, made on first use."""
        with self._lock:
            if self._manifests is None:
                self._manifests = Path(tempfile.mkdtemp(prefix="nami-mcp-code-"))
            return self._manifests

    def __enter__(self) -> McpServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


TRACE_KEYS = ("traceparent", "tracestate")  # W3C trace context


async def _trace_header(request: Any) -> None:
    """A tools/call request that carries trace context in its _meta also carries it as HTTP headers (the W3C
    Trace Context way), for HTTP servers and proxies that trace by header. Untraced requests are left alone."""
    body = request.content
    if b'"traceparent"' not in body:
        return
    try:
        meta = json.loads(body).get("params", {}).get("_meta", {})
    except (ValueError, AttributeError):
        return
    for key in TRACE_KEYS:
        if isinstance(meta.get(key), str):
            request.headers[key] = meta[key]


def tool_name(server: str, tool: str) -> str:
    """``server__tool``, made a valid function name (1-64 of A-Z a-z 0-9 _ -): other characters become ``_``;
    a name too long keeps its start and a short hash of the whole."""
    name = f"{server}{SEPARATOR}{_TOOL_NAME.sub('_', tool)}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    """Every page of the server's tool list. A list that goes on (a new cursor every page, or empty pages)
    or grows past MAX_TOOLS fails now, saying so, rather than when startup_timeout ends it."""
    listed = await session.list_tools()
    tools = list(listed.tools)
    seen: set[str] = set()
    while len(tools) <= MAX_TOOLS and listed.next_cursor and listed.next_cursor not in seen:
        if len(seen) >= MAX_TOOLS:
            raise McpConfigError(f"its tool list goes on for more than {MAX_TOOLS:,} pages")
        seen.add(listed.next_cursor)  # a server repeating a cursor must not loop us either
        listed = await session.list_tools(params=types.PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
    if len(tools) > MAX_TOOLS:
        raise McpConfigError(f"it lists more than {MAX_TOOLS:,} tools")
    return tools


def _needs_login(conn: Connection) -> bool:
    return conn.oauth is not None and bool(conn.oauth.login_needed)


def _progress_callback(report: Callable[[str], None] | None) -> Any:
    """The SDK's progress callback for one call, telling ``report`` a line: ``3/10 downloading``."""
    if report is None:
        return None

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        if total and total > 0:
            done += f" ({min(100.0, 100 * progress / total):.0f}%)"
        report(visible(f"{done} {message}".strip() if message else done)[:200])

    return progressed


def _innermost(exc: BaseException) -> BaseException:
    """The first real exception inside the exception groups anyio's task groups raise."""
    while getattr(exc, "exceptions", None):  # an ExceptionGroup (a backport's on Python 3.10)
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _describe(exc: BaseException) -> str:
    """One line for an exception."""
    exc = _innermost(exc)
    if isinstance(exc, MCPError):
        return exc.message
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _log_tail(path: Path | None, lines: int = 5) -> str:
    """The last lines the server wrote to its log since nami last started it."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 4000))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    latest = text.rsplit("\n--- ", 1)[-1].split("\n", 1)[-1] if "\n--- " in text or text.startswith("--- ") else text
    last = [line for line in latest.splitlines() if line.strip()][-lines:]
    return "\n".join(f"  | {visible(line)}" for line in last)

