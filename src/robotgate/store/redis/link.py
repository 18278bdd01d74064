"""The connection to Redis or Redis Cluster: retries, fail-closed errors, scripts.

Every call retries "cannot reach Redis right now" (connection refused or
lost, timeouts, a replica or a cluster in failover, a slot without a master)
with jittered back-off for up to ``unavailable_timeout`` seconds, then raises
:class:`StoreError`.  Nothing ever returns a default that would let a request
through.  redis-py follows MOVED and ASK redirections itself; after an
unavailable error the cluster client re-reads the topology before the next try.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias, TypeVar

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    InvalidResponse,
    MaxConnectionsError,
    NoScriptError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ...private_parts import REDIS_CLUSTER_INITIALIZE, missing
from ...timeouts import bounded
from ..base import StoreError
from .scripts import Script

__all__ = ["CLOSE_WAIT", "UNAVAILABLE", "Client", "Link", "within"]

_T = TypeVar("_T")

Client: TypeAlias = "aioredis.Redis | RedisCluster"

# Errors that mean "Redis cannot be reached right now": retried, never answered.
UNAVAILABLE: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ReadOnlyError,  # a replica during failover
    ClusterDownError,  # includes MASTERDOWN
    ClusterError,  # redirections exhausted
    TryAgainError,  # a slot half migrated
    AskError,  # and MovedError: redirections still settling
    RedisClusterException,  # no node answers, a slot without a master
    OSError,
    asyncio.TimeoutError,
)

# Back-off between retries of an unreachable Redis (seconds).
RETRY_MIN = 0.05
RETRY_MAX = 1.0
# How long close() waits for a connection to close or a cancelled subscriber to
# end (seconds): redis-py can wait for a socket's close forever (its issue 3941).
CLOSE_WAIT = 2.0

MapError = Callable[[ResponseError, Sequence[str]], StoreError]

_INSIDE = (os.path.dirname(redis.__file__), os.path.dirname(asyncio.__file__))


def pool_empty(exc: BaseException) -> bool:
    """True for redis-py's "no free connection in the pool" (its pool's wait timed
    out, or a cluster node's pool is full): every connection was in use."""
    return isinstance(exc, MaxConnectionsError) or (
        isinstance(exc, RedisConnectionError) and "No connection available" in str(exc))


#: Errors that redis-py raises from its own state rather than as a RedisError.
_STATE_ERRORS = (AttributeError, TypeError, IndexError, KeyError)


def closed_under_us(exc: BaseException) -> bool:
    """True for an AttributeError, TypeError, IndexError or KeyError raised inside
    redis-py or asyncio.

    A connection closed by another task while this one writes on it (the
    cluster client closes every connection on CLUSTERDOWN) surfaces as
    ``'NoneType' object has no attribute 'writelines'`` and the like instead
    of a ConnectionError (redis-py issue 4287); a cluster whose nodes answer
    with no slots (restarted without data, not yet joined) leaves the cluster
    client with no node at all (an IndexError) or without the slot asked for (a
    KeyError).  Either way Redis is not there: it counts as unreachable.  Raised
    from anywhere else, it is a bug, not retried.
    """
    if not isinstance(exc, _STATE_ERRORS):
        return False
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and last.tb_frame.f_code.co_filename.startswith(_INSIDE)


def _without_client_info() -> dict[str, Any]:
    """The connection options that skip ``CLIENT SETINFO``: ``driver_info=None`` where
    redis-py takes it (6.3 and later, which warn of ``lib_name``), else ``lib_name``
    and ``lib_version`` None."""
    options = inspect.signature(AbstractConnection.__init__).parameters
    if "driver_info" in options:
        return {"driver_info": None}
    return {"lib_name": None, "lib_version": None}


_WITHOUT_CLIENT_INFO = _without_client_info()


def _layout_flag_checked(client: Client) -> Client:
    """``client``, once a cluster client is known to have the flag :meth:`Link.refresh`
    sets (redis-py's ``RedisCluster._initialize``); PrivatePartMissing if it has not,
    rather than a cluster client that never reads a changed layout after a failed
    pipeline.  (redis-py's public ways do not serve: ``aclose()`` closes the
    connections other calls are using too, and ``initialize()`` reads the layout
    only while this flag is set.)"""
    if isinstance(client, RedisCluster) and not isinstance(
            getattr(client, "_initialize", None), bool):
        raise missing(REDIS_CLUSTER_INITIALIZE)
    return client


class Link:
    """One store's client (made lazily, or given), and the retry loop around it."""

    def __init__(
        self,
        url: str,
        *,
        cluster: bool,
        client: Client | None,
        unavailable_timeout: float,
        max_connections: int,
        label: str,
        map_error: MapError,
    ) -> None:
        self.url = url
        self.cluster = cluster
        self.unavailable_timeout = unavailable_timeout
        self.max_connections = max_connections
        self.label = label
        #: Requests sent to Redis so far (each command, script call or pipeline
        #: per node, retries included).
        self.round_trips = 0
        self._given = _layout_flag_checked(client) if client is not None else None
        self._client: Client | None = self._given
        self._map_error = map_error
        # Scripts this link has sent whole (EVAL): their first call sends the source
        # instead of asking by hash first, which a server that has not seen it yet
        # answers NOSCRIPT (a round trip lost per script and process).
        self._sent: set[str] = set()
        # Calls queue here, first come first served, for one of the pool's connections:
        # a cluster client's pools do not queue (they raise when full), and a blocking
        # pool's wait ends in "No connection available" after its timeout however
        # healthy Redis is.  A wait here has no timeout: each call ahead is bounded.
        # Urgent calls (a fetch lock's renewal) go ahead of the others.
        self._gate: _Gate | None = None
        # Cluster nodes our client has used, by identity: a topology refresh may
        # drop one with a connection still open, which close() then closes.
        self._nodes: dict[int, Any] = {}

    # -- the client --------------------------------------------------------

    def client(self) -> Client:
        if self._client is None:
            self._client = self._make()
        return self._client

    def _make(self) -> Client:
        # Bounded socket timeouts so a hung server counts as unreachable; no
        # redis-py retries: call() retries, within unavailable_timeout.  RESP2 and no
        # CLIENT SETINFO: a RESP3 connection opens with HELLO and a notifications
        # handshake, and SETINFO is one more; three round trips each of the pool's
        # connections would cost, for nothing its replies need.
        timeout = self._socket_timeout()
        if self.cluster:
            return _layout_flag_checked(RedisCluster.from_url(
                self.url,
                max_connections=self.max_connections,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
                protocol=2,
                **_WITHOUT_CLIENT_INFO,
                # Slots of live masters keep working while another is down.
                require_full_coverage=False,
            ))
        pool = aioredis.BlockingConnectionPool.from_url(
            self.url,
            max_connections=self.max_connections,
            timeout=self.unavailable_timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            protocol=2,
            **_WITHOUT_CLIENT_INFO,
        )
        return aioredis.Redis.from_pool(pool)

    def _socket_timeout(self) -> float:
        return max(0.5, min(5.0, self.unavailable_timeout))

    async def close(self) -> None:
        client, self._client = self._client, self._given
        self._gate = None
        if client is not None and client is not self._given:
            self._remember(client)
            try:
                await within(client.aclose(), CLOSE_WAIT)
            finally:
                nodes, self._nodes = list(self._nodes.values()), {}
                for node in nodes:
                    with contextlib.suppress(Exception):
                        await within(node.disconnect(), CLOSE_WAIT)

    def _remember(self, client: Client) -> None:
        if isinstance(client, RedisCluster) and client is not self._given:
            manager = client.nodes_manager
            for node in [*manager.nodes_cache.values(), *manager.startup_nodes.values()]:
                self._nodes.setdefault(id(node), node)

    def subscriber(self, node: Any) -> aioredis.Redis:
        """A plain client on one cluster node, for its shard-channel subscriptions."""
        kwargs = dict(node.connection_kwargs)
        kwargs["retry"] = Retry(NoBackoff(), 0)
        pool = aioredis.ConnectionPool(connection_class=node.connection_class, **kwargs)
        return aioredis.Redis.from_pool(pool)

    def node_for(self, key: str) -> Any:
        """The cluster node that owns ``key``'s slot, as far as the client knows."""
        client = self.client()
        assert isinstance(client, RedisCluster)
        return client.get_node_from_key(key)

    @staticmethod
    def slot(key: str) -> int:
        return key_slot(key.encode())

    def refresh(self, client: Client) -> None:
        """Have a cluster client read the cluster's layout again before its next command."""
        # After an unavailable error the cluster's layout may have changed (a
        # failover, a node back): re-read it before the next try.  redis-py does
        # this itself after a failed single command, but not after a pipeline.
        if isinstance(client, RedisCluster):  # its _initialize checked as it came
            self._remember(client)
            client._initialize = True
            if client is not self._given and not client.nodes_manager.startup_nodes:
                # It forgot every node (they answered with no slots): only a new
                # client, from the URL, finds the cluster again.
                self._client = None

    # -- calls ---------------------------------------------------------------

    async def call(self, attempt: Callable[[Client], Awaitable[_T]], keys: Sequence[str],
                   *, urgent: bool = False) -> _T:
        """Run ``attempt`` until it answers; fail closed after ``unavailable_timeout``.
        ``urgent``: it waits for a connection ahead of the calls that are not.

        A try that neither answers nor fails (redis-py waiting on something with
        no timer of its own) is cut off once the time is up, plus two socket
        timeouts: a call always ends.  Redis is unreachable for the time its failed
        tries took and the pauses between them, not the time a call queued for one of
        the connections, which other calls held.
        """
        started = time.monotonic()
        unreachable = 0.0
        delay = RETRY_MIN
        slack = 2 * self._socket_timeout()
        turn_at = started

        def turn_came() -> None:
            nonlocal turn_at
            turn_at = time.monotonic()

        while True:
            self.round_trips += 1
            client = self.client()
            failure: BaseException
            try:
                bound = self.unavailable_timeout - unreachable + slack
                return await self._try(client, attempt, bound, urgent, turn_came)
            except ResponseError as exc:
                if not isinstance(exc, UNAVAILABLE):
                    raise self._map_error(exc, keys) from exc
                failure = exc
            except InvalidResponse as exc:  # another protocol's answer: no Redis there
                raise StoreError(f"what answers at {self.label} is not Redis: {exc}") from exc
            except UNAVAILABLE as exc:
                failure = exc
            except _STATE_ERRORS as exc:
                if not closed_under_us(exc):
                    raise
                failure = exc
            self.refresh(client)
            unreachable += time.monotonic() - turn_at
            if unreachable >= self.unavailable_timeout:
                if pool_empty(failure):
                    elapsed = time.monotonic() - started
                    raise StoreError(
                        f"no connection to Redis at {self.label} came free for {elapsed:.1f} s:"
                        f" all {self.pool_size(client)} of its pool were in use (raise"
                        " max_connections; a client given may be in use elsewhere too)"
                    ) from failure
                raise StoreError(
                    f"Redis at {self.label} unreachable for {unreachable:.1f} s: {failure}"
                ) from failure
            pause = min(delay * random.uniform(0.5, 1.0), self.unavailable_timeout - unreachable)
            await asyncio.sleep(pause)
            unreachable += pause
            delay = min(delay * 2, RETRY_MAX)

    async def once(self, attempt: Callable[[Client], Awaitable[_T]]) -> _T:
        """One try of ``attempt``, no retry (for what is best effort), counted; bounded
        like a call's."""
        self.round_trips += 1
        bound = self.unavailable_timeout + 2 * self._socket_timeout()
        return await self._try(self.client(), attempt, bound)

    async def _try(self, client: Client, attempt: Callable[[Client], Awaitable[_T]],
                   bound: float, urgent: bool = False,
                   turn_came: Callable[[], None] | None = None) -> _T:
        """One try, cut off after ``bound`` seconds (counted from when a connection is
        free: ``turn_came`` hears it), within the connection cap (see
        :meth:`connections`).  A cancellation
        that redis-py swallowed (one landing as a connect or a read completes) is
        raised all the same: a caller that stops a task awaits its end."""
        task = asyncio.current_task()
        cancels = _cancels(task)
        try:
            if self._gate is None:
                self._gate = _Gate(self.connections(client))
            gate = self._gate
            await gate.acquire(urgent)
            if turn_came is not None:
                turn_came()
            try:
                return await bounded(attempt(client), bound)
            finally:
                gate.release()
        finally:
            if _cancels(task) > cancels:
                raise asyncio.CancelledError

    def pool_size(self, client: Client) -> int:
        """Connections per server: ``max_connections``, or a given client's own if fewer."""
        size = self.max_connections
        if client is self._given:
            if isinstance(client, RedisCluster):
                given = client.connection_kwargs.get("max_connections")
            else:
                given = getattr(getattr(client, "connection_pool", None), "max_connections",
                                None)
            if isinstance(given, int) and given > 0:
                size = min(size, given)
        return size

    def connections(self, client: Client) -> int:
        """How many calls may be out at once: the pool's size, less the connection a
        plain server's subscriber holds (a cluster's subscribers have their own)."""
        return max(1, self.pool_size(client) - (0 if self.cluster else 1))

    async def script(self, script: Script, keys: list[str], args: list[Any], *,
                     urgent: bool = False) -> Any:
        """One script call: ``EVALSHA``, and ``EVAL`` where the script is not cached;
        ``urgent`` as :meth:`call`."""

        async def attempt(client: Client) -> Any:
            if script.sha not in self._sent:
                reply = await client.eval(script.source, len(keys), *keys, *args)
                self._sent.add(script.sha)
                return reply
            try:
                return await client.evalsha(script.sha, len(keys), *keys, *args)
            except NoScriptError:
                # Not cached on this server (after a restart, or another node): EVAL
                # caches it.
                self.round_trips += 1
                return await client.eval(script.source, len(keys), *keys, *args)

        return await self.call(attempt, keys, urgent=urgent)

    async def scripts(self, script: Script, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
        """Several calls of one script in one pipeline (per node, on a cluster).

        Idempotent calls only: after an unavailable error the whole pipeline is
        sent again.  Returns the replies in order; the first call that failed raises.
        """
        if len(calls) == 1:
            return [await self.script(script, *calls[0])]
        replies = await self.batch([(script, keys, args) for keys, args in calls])
        for reply in replies:
            if isinstance(reply, StoreError):
                raise reply
        return replies

    async def batch(self, calls: list[tuple[Script, list[str], list[Any]]], *,
                    urgent: bool = False) -> list[Any]:
        """Calls of several scripts in one pipeline (one request per node, on a cluster).

        Idempotent calls only: after an unavailable error the whole pipeline is
        sent again.  Returns each call's reply in order, or, where that call alone
        failed (foreign data under its keys), the :class:`StoreError` saying so.
        ``urgent`` as :meth:`call`.
        """
        every_key = [key for _, keys, _ in calls for key in keys]

        async def attempt(client: Client) -> list[Any]:
            replies = await self._pipeline(client, calls, cached=True)
            missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
            if missing:
                again = await self._pipeline(client, [calls[i] for i in missing], cached=False)
                for i, reply in zip(missing, again, strict=True):
                    replies[i] = reply
            for i, reply in enumerate(replies):
                if isinstance(reply, UNAVAILABLE):
                    raise reply  # the whole pipeline is sent again
                if isinstance(reply, ResponseError):
                    replies[i] = self._map_error(reply, calls[i][1])
                elif isinstance(reply, BaseException):
                    raise reply
            return replies

        return await self.call(attempt, every_key, urgent=urgent)

    async def _pipeline(
        self,
        client: Client,
        calls: list[tuple[Script, list[str], list[Any]]],
        *,
        cached: bool,
    ) -> list[Any]:
        if isinstance(client, RedisCluster):
            pipe: Any = client.pipeline()
            # One request per node that owns some of the slots.
            nodes = {client.get_node_from_key(keys[0]) for _, keys, _ in calls}
            self.round_trips += max(1, len(nodes)) - 1
        else:
            pipe = client.pipeline(transaction=False)
        for script, keys, args in calls:
            # execute_command: redis-py's cluster pipeline refuses the evalsha()
            # method, as a script might cross slots; these never do, and the
            # pipeline routes EVAL/EVALSHA by their keys.
            if cached and script.sha in self._sent:
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            else:
                pipe.execute_command("EVAL", script.source, len(keys), *keys, *args)
        if not cached:
            self.round_trips += 1
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        self._sent.update(script.sha for (script, _, _), reply in zip(calls, replies, strict=True)
                          if not isinstance(reply, BaseException))
        return replies


class _Gate:
    """A semaphore of ``size`` whose urgent waiters are served first (each kind first
    come, first served)."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._urgent: collections.deque[asyncio.Future[None]] = collections.deque()
        self._others: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self, urgent: bool) -> None:
        if self._free > 0 and not self._urgent and (urgent or not self._others):
            self._free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._urgent if urgent else self._others).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed over as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):  # a release may have passed it by
                    (self._urgent if urgent else self._others).remove(turn)
            raise

    def release(self) -> None:
        for queue in (self._urgent, self._others):
            while queue:
                turn = queue.popleft()
                if not turn.done():
                    turn.set_result(None)  # the slot passes to it
                    return
        self._free += 1


def _cancels(task: asyncio.Task[Any] | None) -> int:
    """The cancellations asked of ``task`` and not yet taken back (0 before 3.11)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling() if cancelling is not None else 0


async def within(aw: Awaitable[Any], seconds: float) -> None:
    """Await ``aw`` for at most ``seconds``, then cancel it and go on (for closing).

    Unlike ``wait_for``, this does not wait for the cancelled work to end: a
    close must not hang on a socket that never says it is closed.
    """
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        return
    task.result()
