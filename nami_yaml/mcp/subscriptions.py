"""Which protocol nami speaks with a server, and a server's changes on the 2026-07-28 protocol.

:func:`negotiate` is the SDK's own connect policy (what its ``Client`` does by default): ``server/discover``
at 2026-07-28, and the ``initialize`` handshake (2024-11-05 to 2025-11-25) where the server does not answer
it. Up to 2025-11-25 a server sends ``notifications/resources/list_changed`` to every client of its session,
and the client's message handler lists the resources again. From 2026-07-28 on (SEP-2575) a server sends
change notifications only on a ``subscriptions/listen`` request its client opened: :class:`ChangeListener`
opens one with the SDK's :func:`mcp.client.subscriptions.listen`, for what nami uses: resource list changes
(the read tool's list). Not tool or prompt list changes (nami lists both once, at start: the tools sent to
the model stay as they were, so prompt caches hold), nor updates of single resources (nami follows none, as
it sent no ``resources/subscribe`` on older protocols).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import anyio
from anyio.abc import TaskStatus
from mcp.client._probe import negotiate_auto  # the SDK's policy for Client(mode="auto")
from mcp.client.session import ClientSession
from mcp.client.subscriptions import Subscription, SubscriptionLost, listen
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# A stream lost this soon after it opened is not opened again: a server that drops it at once would have nami
# re-open it (and list the resources again) in a loop.
QUICK_LOSS = 10.0
NOT_SEEN = "changes to its resources are not seen from now on (the read tool lists them fresh without uri)"


async def negotiate(session: ClientSession) -> None:
    """Agree on the protocol version with the server, as the SDK's Client does: 2026-07-28 where the server
    speaks it, else the newest of the handshake's versions both speak."""
    await negotiate_auto(session)


def listen_needed(session: ClientSession) -> bool:
    """Whether the negotiated protocol sends change notifications only on a listen stream."""
    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


class ChangeListener:
    """One server's ``subscriptions/listen`` stream for resource list changes, opened by :meth:`run` (a task
    of the server's connection) and closed by :meth:`close`. It never raises: a server that refuses the
    stream, does not acknowledge it in time, drops it or closes it is told to ``tell`` (shown with -v), and
    its tools go on working."""

    def __init__(self, session: ClientSession, *, timeout: float, changed: Callable[[], Awaitable[None]],
                 tell: Callable[[str], None], running: Callable[[], bool]):
        self.session = session
        self.timeout = timeout  # how long the server may take to acknowledge the stream
        self.changed = changed  # lists the resources again
        self.tell = tell
        self.running = running  # False once the server is stopping or gone: nothing is opened again then
        # Set once nami's own first listing is done: changes are worked from then on (those the server
        # announced before wait in the SDK's backlog, each kind once).
        self.listed = anyio.Event()
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open the stream; ``task_status.started()`` once the server acknowledged it or it failed (so the
        resources nami then lists are those from the stream's start on), then list them again on each change,
        until closed. A stream lost later than QUICK_LOSS after it opened is opened again, and the resources
        listed again (the protocol replays nothing)."""
        started = False
        try:
            with self._scope:
                opened: float | None = None
                while self.running():
                    async with AsyncExitStack() as stack:
                        subscription = await self._open(stack)
                        if subscription is None:
                            return
                        again, opened = opened is not None, anyio.current_time()
                        if not started:
                            started = True
                            task_status.started()
                        await self.listed.wait()
                        if not await self._follow(subscription, again, opened):
                            return
        finally:
            if not started:
                task_status.started()
            self._done.set()

    async def _open(self, stack: AsyncExitStack) -> Subscription | None:
        try:
            with anyio.fail_after(self.timeout):
                subscription = await stack.enter_async_context(listen(self.session, resources_list_changed=True))
        except TimeoutError:
            self.tell(f"it did not acknowledge subscriptions/listen within {self.timeout:g} s; {NOT_SEEN}")
            return None
        except Exception as exc:  # refused (an MCPError), or the connection went: a -v notice, never a failure
            if self.running():
                self.tell(f"it refused subscriptions/listen ({_why(exc)}); {NOT_SEEN}")
            return None
        if not subscription.honored.resources_list_changed:
            self.tell(f"it acknowledged subscriptions/listen without resource list changes; {NOT_SEEN}")
            return None
        return subscription

    async def _follow(self, subscription: Subscription, again: bool, opened: float) -> bool:
        """List the resources again on each change until the stream ends; True where it was lost and is to be
        opened again."""
        try:
            if again:  # what changed while no stream was open
                await self.changed()
            async for _change in subscription:
                await self.changed()
        except SubscriptionLost as exc:
            if not self.running():
                return False
            if anyio.current_time() - opened >= QUICK_LOSS:
                return True
            self.tell(f"its subscriptions/listen stream was lost ({_why(exc)}); {NOT_SEEN}")
            return False
        if self.running():
            self.tell(f"it ended the subscriptions/listen stream; {NOT_SEEN}")
        return False

    def cancel(self) -> None:
        """End the stream now (the connection is going)."""
        self._scope.cancel()

    async def close(self, grace: float) -> None:
        """End the stream (the SDK tells the server: notifications/cancelled, or the HTTP request ended) and wait
        at most ``grace`` seconds for it to be closed."""
        self._scope.cancel()
        with anyio.move_on_after(grace):
            await self._done.wait()


def _why(exc: BaseException) -> str:
    cause = exc.__cause__ if isinstance(exc, SubscriptionLost) and exc.__cause__ is not None else exc
    if isinstance(cause, MCPError):
        return cause.message
    return str(cause) or type(cause).__name__
