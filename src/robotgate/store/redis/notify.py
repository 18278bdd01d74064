"""Waking ``wait_robots`` calls: pub/sub on one server, sharded pub/sub on a cluster.

When a worker saves an origin's robots.txt entry, or releases its fetch lock,
``saved <origin>`` or ``released <origin>`` is published, and the workers
waiting for that origin are woken at once instead of polling.  Messages can
be lost (a subscriber reconnecting, a node failing, a slot moving); waiters
therefore always re-check Redis when woken, re-check on their own now and
then, and poll quickly whenever their channel is not known to be subscribed.

- One server (:class:`ChannelNotifier`): the save and unlock scripts publish
  on ``P:done``; each store has one connection subscribed to it.
- Redis Cluster (:class:`ShardNotifier`): a sharded channel (``SSUBSCRIBE``,
  ``SPUBLISH``, Redis 7+) lives on the node that owns its slot.  Notifications
  go to 64 fixed channels ``P:done:{b0}`` ... ``P:done:{b63}`` (an origin's is
  ``slot(origin) mod 64``), spread over the masters; the store publishes
  after the script (a script may only touch its own slot), if a waiter set
  the origin's wait flag ``P:wait:{O}`` (its looks do, while the fetch is
  under way).  Each store
  subscribes to all 64 once, one connection per master, so a wait costs no
  subscription of its own.  A subscriber that loses its node, or a channel
  whose slot moves away, is subscribed again on the new owner once the
  cluster's layout has been read again; meanwhile, and on servers without
  sharded pub/sub, waiters poll every 50 to 500 ms.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio.cluster import RedisCluster

from ...timeouts import bounded
from ..base import RobotsEntry
from .codec import Keys
from .link import CLOSE_WAIT, RETRY_MAX, RETRY_MIN, UNAVAILABLE, Link

__all__ = [
    "ChannelNotifier",
    "Notifier",
    "Publisher",
    "ShardNotifier",
    "Waiter",
    "message",
    "wait_for_entry",
]

_log = logging.getLogger("robotgate.store.redis")

# Seconds to wait for a subscription to be confirmed before polling instead.
SUBSCRIBE_WAIT = 0.5
# Longest wait of a subscriber for a message: it checks for close() this often.
READ_WAIT = 5.0
# A waiter re-checks on its own this often while its channel is subscribed (a
# safety net for messages lost in a reconnect) ...
POLL_SUBSCRIBED = (1.0, 5.0)
# ... and this often while it is not (the subscriber down, or no sharded pub/sub).
POLL_UNSUBSCRIBED = (0.05, 0.5)

Peek = Callable[[], Awaitable[tuple[RobotsEntry | None, object]]]


@dataclass(eq=False)
class Waiter:
    """One wait_robots call, woken by the subscriber."""

    event: asyncio.Event
    # A "saved" message arrived: whatever is stored now was stored during the wait.
    saved: bool = False
    # A "released" message arrived: a holder let go of the lock.
    released: bool = False


def message(kind: str, origin: str) -> bytes:
    """The notification that ``origin``'s fetch ended: ``saved`` or ``released``."""
    return f"{kind} {origin}".encode()


class Publisher:
    """Says that an origin's robots.txt fetch ended: ``saved`` or ``released``.

    On one server the script that saves or unlocks publishes it (atomically).
    On a cluster the channel lives in another slot than the script's keys, so
    the script cannot: the store publishes after it, in the background, if a
    waiter set the origin's wait flag (the script says); best effort, as waiters
    also poll.
    """

    def __init__(self, link: Link, keys: Keys, cluster: bool) -> None:
        self._link = link
        self._keys = keys
        self._cluster = cluster
        self._tasks: set[asyncio.Task[None]] = set()

    def script_args(self, kind: str, origin: str) -> list[Any]:
        """The channel and message for the script (empty on a cluster)."""
        return ["", ""] if self._cluster else [self._keys.done, message(kind, origin)]

    def flag_keys(self, origin: str) -> list[str]:
        """The wait flag, after the script's other keys (a cluster's only)."""
        return [self._keys.waiting(origin)] if self._cluster else []

    def after(self, kind: str, origin: str) -> None:
        """The script has run: on a cluster, publish now."""
        if not self._cluster:
            return
        task = asyncio.get_running_loop().create_task(self._publish(kind, origin))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the notifications on their way."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _publish(self, kind: str, origin: str) -> None:
        channel = self._keys.bucket(origin)
        try:
            await self._link.once(lambda client: client.spublish(channel, message(kind, origin)))
        except Exception as exc:  # lost: the waiters find out by polling
            _log.debug("robotgate: publishing on %s failed: %r", channel, exc)


class Notifier(abc.ABC):
    """The waiters of one store, by origin, and the subscriptions that wake them."""

    def __init__(self, link: Link, keys: Keys) -> None:
        self._link = link
        self._keys = keys
        self._waiters: dict[str, set[Waiter]] = {}
        # Set by close(): a wait still running then polls, and starts no subscriber.
        self.closed = False

    def add(self, origin: str) -> Waiter:
        """Register a waiter for ``origin`` (no I/O)."""
        waiter = Waiter(asyncio.Event())
        self._waiters.setdefault(origin, set()).add(waiter)
        return waiter

    def remove(self, origin: str, waiter: Waiter) -> None:
        waiters = self._waiters.get(origin)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[origin]

    @abc.abstractmethod
    def listening_for(self, origin: str) -> bool:
        """True when a notification about ``origin`` would reach its waiters now."""

    async def listen_for(self, origin: str, wait: float) -> None:
        """Start the subscriber(s) if needed; wait up to ``wait`` s for ``origin``'s channel."""
        if self.closed:
            return
        self._start()
        ready = self._ready_event(origin)
        if ready is not None and not ready.is_set() and wait > 0:
            # Healthy, it is ready in a round trip; if not, waiters poll.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ready.wait(), min(wait, SUBSCRIBE_WAIT))

    @property
    @abc.abstractmethod
    def listening(self) -> bool:
        """True while some subscription is confirmed."""

    @abc.abstractmethod
    def _start(self) -> None:
        """Start the subscriber task(s) if they are not running."""

    @abc.abstractmethod
    def _ready_event(self, origin: str) -> asyncio.Event | None:
        """Set once ``origin``'s channel is subscribed."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop every subscriber."""

    def _dispatch(self, data: object) -> None:
        if not isinstance(data, bytes):
            return
        kind, _, raw_origin = data.partition(b" ")
        origin = raw_origin.decode("utf-8", "replace")
        for waiter in self._waiters.get(origin, ()):
            if kind == b"saved":
                waiter.saved = True
            elif kind == b"released":
                waiter.released = True
            waiter.event.set()

    def _wake(self, wanted: Callable[[str], bool] | None = None) -> None:
        """Waiters look in Redis again (messages may have been lost): those whose
        origin is ``wanted``, or all."""
        for origin, waiters in self._waiters.items():
            if wanted is None or wanted(origin):
                for waiter in waiters:
                    waiter.event.set()


async def _stop(task: asyncio.Task[None] | None) -> None:
    """Cancel a subscriber task and let it end, waiting at most ``CLOSE_WAIT`` seconds
    per try.  A cancellation that lands as a read completes can be lost inside
    redis-py: it is asked twice, and the task also ends at its next read, as it
    sees its notifier closed."""
    for _ in range(2):
        if task is None or task.done():
            return
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=CLOSE_WAIT)
        if done:
            if not task.cancelled():
                task.exception()  # retrieved: it handled its own errors
            return
    _log.debug("robotgate: a Redis subscriber did not end within %g s", 2 * CLOSE_WAIT)


class ChannelNotifier(Notifier):
    """One server: one connection per store, subscribed to ``P:done``."""

    def __init__(self, link: Link, keys: Keys) -> None:
        super().__init__(link, keys)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def listening_for(self, origin: str) -> bool:
        return self._ready.is_set()

    @property
    def listening(self) -> bool:
        return self._ready.is_set()

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen())

    def _ready_event(self, origin: str) -> asyncio.Event:
        return self._ready

    async def close(self) -> None:
        self.closed = True
        task, self._task = self._task, None
        await _stop(task)
        self._ready.clear()

    async def _listen(self) -> None:
        """Subscribe and dispatch; reconnect with back-off for as long as the store is open.

        After every (re)subscription all waiters re-check, since messages sent
        while it was down are lost.
        """
        delay = RETRY_MIN
        while not self.closed:
            client = self._link.client()
            assert not isinstance(client, RedisCluster)
            pubsub = client.pubsub()
            try:
                self._link.round_trips += 1
                await pubsub.subscribe(self._keys.done)
                while not self.closed:
                    got = await pubsub.get_message(timeout=READ_WAIT)
                    if got is None:
                        continue
                    kind = got.get("type")
                    if kind == "subscribe":
                        delay = RETRY_MIN
                        self._ready.set()
                        self._wake()
                    elif kind == "message":
                        self._dispatch(got.get("data"))
            except UNAVAILABLE as exc:
                _log.debug("robotgate: Redis subscriber at %s lost: %s", self._link.label, exc)
            except Exception:
                # Say why, then keep going: waiters poll meanwhile.
                _log.warning(
                    "robotgate: Redis subscriber at %s failed", self._link.label, exc_info=True
                )
            finally:
                self._ready.clear()
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, RETRY_MAX)


class _NodeSubscriber:
    """One connection to one cluster node, subscribed to the channels that node owns."""

    def __init__(self, owner: ShardNotifier, node: Any, channels: list[str]) -> None:
        self.owner = owner
        self.name: str = node.name
        self.channels = set(channels)
        self.client = owner._link.subscriber(node)
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        pubsub = self.client.pubsub()
        try:
            # One command per channel (each is in a slot of its own), sent in a row.
            self.owner._link.round_trips += 1
            for channel in sorted(self.channels):
                await pubsub.ssubscribe(channel)
            while self.channels and not self.owner.closed:
                got = await pubsub.get_message(timeout=READ_WAIT)
                if got is None:
                    continue
                kind, channel = got.get("type"), got.get("channel")
                name = channel.decode() if isinstance(channel, bytes) else None
                if kind == "smessage":
                    self.owner._dispatch(got.get("data"))
                elif kind == "ssubscribe" and name in self.channels:
                    self.owner._confirmed(self, name)
                elif kind == "sunsubscribe" and name in self.channels:
                    # The server dropped it: its slot moved to another node.
                    self.channels.discard(name)
                    self.owner._lost(self, {name})
        except UNAVAILABLE as exc:
            _log.debug("robotgate: shard subscriber on %s lost: %s", self.name, exc)
        except Exception as exc:
            if "unknown command" in str(exc).lower():
                self.owner.unsupported = True
                _log.info("robotgate: no sharded pub/sub on %s; waiters poll", self.name)
            else:
                # A slot moved (MOVED), or worse: subscribe again after a new look.
                _log.debug("robotgate: shard subscriber on %s ended: %r", self.name, exc)
        finally:
            self.owner._gone(self)
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                await self.client.aclose()


class ShardNotifier(Notifier):
    """Redis Cluster: 64 sharded channels, each subscribed on the node that owns it."""

    def __init__(self, link: Link, keys: Keys) -> None:
        super().__init__(link, keys)
        self._placed: dict[str, _NodeSubscriber] = {}
        self._ready = {channel: asyncio.Event() for channel in keys.buckets}
        self._nodes: set[_NodeSubscriber] = set()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Set once a node answers SSUBSCRIBE with "unknown command" (Redis < 7).
        self.unsupported = False

    def listening_for(self, origin: str) -> bool:
        return self._ready[self._keys.bucket(origin)].is_set()

    @property
    def listening(self) -> bool:
        return any(ready.is_set() for ready in self._ready.values())

    def _start(self) -> None:
        if not self.unsupported and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._supervise())

    def _ready_event(self, origin: str) -> asyncio.Event:
        return self._ready[self._keys.bucket(origin)]

    async def close(self) -> None:
        self.closed = True
        task, self._task = self._task, None
        await _stop(task)
        nodes, self._nodes = list(self._nodes), set()
        for node in nodes:
            await _stop(node.task)
        self._placed.clear()
        for ready in self._ready.values():
            ready.clear()

    async def _supervise(self) -> None:
        """Keep every channel subscribed on the node that owns it, whatever happens."""
        delay = RETRY_MIN
        while not self.unsupported and not self.closed:
            self._changed.clear()
            missing = [c for c in self._keys.buckets if c not in self._placed]
            if missing:
                try:
                    await self._place(missing)
                except Exception as exc:  # the layout cannot be read now: later
                    _log.debug("robotgate: placing shard subscriptions failed: %r", exc)
            if len(self._placed) == len(self._keys.buckets):
                delay = RETRY_MIN
                await self._changed.wait()
                continue
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, RETRY_MAX)

    async def _place(self, channels: list[str]) -> None:
        client = self._link.client()
        assert isinstance(client, RedisCluster)
        if self._nodes or channels != self._keys.buckets:
            # Something was lost: the layout may have changed (a failover, a
            # slot moved, a node back); read it again first.
            self._link.refresh(client)
        # Bounded: a layout read that never ends would stop every re-subscription.
        await bounded(client.initialize(), self._link.unavailable_timeout + 10)
        by_node: dict[str, tuple[Any, list[str]]] = {}
        for channel in channels:
            node = client.get_node_from_key(channel)
            if node is not None:
                by_node.setdefault(node.name, (node, []))[1].append(channel)
        for node, owned in by_node.values():
            subscriber = _NodeSubscriber(self, node, owned)
            self._nodes.add(subscriber)
            for channel in owned:
                self._placed[channel] = subscriber

    def _confirmed(self, node: _NodeSubscriber, channel: str) -> None:
        if self._placed.get(channel) is node:
            self._ready[channel].set()
            # Messages sent before the subscription are lost: its waiters look now.
            self._wake(lambda origin: self._keys.bucket(origin) == channel)

    def _lost(self, node: _NodeSubscriber, channels: set[str]) -> None:
        lost = {c for c in channels if self._placed.get(c) is node}
        for channel in lost:
            del self._placed[channel]
            self._ready[channel].clear()
        if lost:
            # Their waiters poll until the channels are subscribed again.
            self._wake(lambda origin: self._keys.bucket(origin) in lost)
            self._changed.set()

    def _gone(self, node: _NodeSubscriber) -> None:
        self._nodes.discard(node)
        self._lost(node, set(node.channels))


async def wait_for_entry(
    notifier: Notifier, origin: str, timeout: float, peek: Peek
) -> RobotsEntry | None:
    """``RedisStore.wait_robots``: look (``peek``), sleep until woken or a poll is due, repeat.

    Returns an entry that is fresh or was fetched after the call began; ``None``
    when ``timeout`` passes, or when the fetch lock, once seen held, is released
    or expires without such an entry.
    """
    started = time.time()
    deadline = time.monotonic() + max(0.0, timeout)
    waiter = notifier.add(origin)
    saw_lock = False
    poll = POLL_UNSUBSCRIBED[0]
    try:
        while True:
            # Cleared before the check: a message arriving during it sets it again.
            waiter.event.clear()
            listening = notifier.listening_for(origin)
            entry, lock_ms = await peek()
            # A save announced during the wait counts whatever the fetching
            # worker's clock says (clocks of workers may differ).
            if entry is not None and (
                waiter.saved or entry.fetched_at >= started or entry.is_fresh(time.time())
            ):
                return entry
            held = isinstance(lock_ms, int) and lock_ms != -2
            if held:
                saw_lock = True
            elif saw_lock or waiter.released:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not listening:
                await notifier.listen_for(origin, remaining)
                if notifier.listening_for(origin):
                    continue  # subscribed after that check: look again before sleeping
            poll_min, poll_max = (
                POLL_SUBSCRIBED if notifier.listening_for(origin) else POLL_UNSUBSCRIBED
            )
            poll = min(max(poll, poll_min), poll_max)
            # Jitter so that waiting workers do not poll in lockstep.
            nap = min(remaining, poll * random.uniform(0.5, 1.0))
            if held and isinstance(lock_ms, int) and lock_ms >= 0:
                # Look again just after the lock expires: its holder may be dead.
                nap = min(nap, lock_ms / 1000 + 0.01)
            try:
                await asyncio.wait_for(waiter.event.wait(), nap)
            except asyncio.TimeoutError:
                poll = min(poll * 2, poll_max)
    finally:
        notifier.remove(origin, waiter)
