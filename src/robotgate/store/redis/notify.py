"""Waking ``wait_robots`` calls: pub/sub on one server, sharded pub/sub on a cluster.

When a worker saves an origin's robots.txt entry, or releases its fetch lock,
the script that does it publishes ``saved`` or ``released`` on the origin's
channel ``P:done:{O}``.  Workers waiting for that origin are woken at once
instead of polling.  Messages can be lost (a subscriber reconnecting, a slot
moving); waiters therefore always re-check Redis when woken, re-check on
their own now and then, and poll quickly whenever their channel is not
known to be subscribed.

- One server (:class:`PatternNotifier`): one connection per store with one
  pattern subscription to every channel of the prefix.
- Redis Cluster (:class:`ShardNotifier`): a channel lives on the node that
  owns its slot (``SSUBSCRIBE``/``SPUBLISH``, Redis 7+), so a store keeps one
  subscriber connection per node it waits on, subscribed to the channels of
  the origins being waited for.  A node lost, or a slot moved, ends that
  node's subscriber; its waiters re-check and subscribe again on whichever
  node owns the slot by then.  On a server without sharded pub/sub the
  waiters just poll (every 50 to 500 ms).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .codec import Keys
from .link import RETRY_MAX, RETRY_MIN, UNAVAILABLE, Link

__all__ = ["Notifier", "PatternNotifier", "ShardNotifier", "Waiter"]

_log = logging.getLogger("robotgate.store.redis")

# Seconds to wait for a subscription to be confirmed before polling instead.
SUBSCRIBE_WAIT = 0.5


@dataclass(eq=False)
class Waiter:
    """One wait_robots call, woken by the subscriber."""

    event: asyncio.Event
    # A "saved" message arrived: whatever is stored now was stored during the wait.
    saved: bool = False
    # A "released" message arrived: a holder let go of the lock.
    released: bool = False


class Notifier(abc.ABC):
    """The waiters of one store, by channel, and the subscriptions that wake them."""

    def __init__(self, link: Link, keys: Keys) -> None:
        self._link = link
        self._keys = keys
        self._waiters: dict[bytes, set[Waiter]] = {}
        # Set by close(): a wait still running then polls, and starts no subscriber.
        self.closed = False

    def add(self, origin: str) -> Waiter:
        """Register a waiter for ``origin``'s channel (no I/O)."""
        waiter = Waiter(asyncio.Event())
        self._waiters.setdefault(self._channel(origin), set()).add(waiter)
        return waiter

    def remove(self, origin: str, waiter: Waiter) -> None:
        channel = self._channel(origin)
        waiters = self._waiters.get(channel)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[channel]
                self._forget(channel)

    @abc.abstractmethod
    def listening_for(self, origin: str) -> bool:
        """True when a message on ``origin``'s channel would reach its waiters now."""

    @abc.abstractmethod
    async def listen_for(self, origin: str, wait: float) -> None:
        """Subscribe to ``origin``'s channel if needed; wait up to ``wait`` s for it."""

    @property
    @abc.abstractmethod
    def listening(self) -> bool:
        """True while some subscription is confirmed."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop every subscriber."""

    def _forget(self, channel: bytes) -> None:  # noqa: B027
        """The last waiter of ``channel`` is gone."""

    def _channel(self, origin: str) -> bytes:
        return self._keys.channel(origin).encode()

    def _dispatch(self, channel: object, data: object) -> None:
        if not isinstance(channel, bytes):
            return
        for waiter in self._waiters.get(channel, ()):
            if data == b"saved":
                waiter.saved = True
            elif data == b"released":
                waiter.released = True
            waiter.event.set()

    def _wake(self, channels: Iterable[bytes] | None = None) -> None:
        """Wake the waiters of ``channels`` (all when ``None``): they re-check Redis."""
        for channel in list(self._waiters if channels is None else channels):
            for waiter in self._waiters.get(channel, ()):
                waiter.event.set()


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class PatternNotifier(Notifier):
    """One server: one connection per store, one pattern subscription to all channels."""

    def __init__(self, link: Link, keys: Keys) -> None:
        super().__init__(link, keys)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def listening_for(self, origin: str) -> bool:
        return self._ready.is_set()

    @property
    def listening(self) -> bool:
        return self._ready.is_set()

    async def listen_for(self, origin: str, wait: float) -> None:
        if self.closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._listen())
        if not self._ready.is_set() and wait > 0:
            # Healthy, it is ready in a round trip; if not, waiters poll.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._ready.wait(), min(wait, SUBSCRIBE_WAIT))

    async def close(self) -> None:
        self.closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._ready.clear()

    async def _listen(self) -> None:
        """Subscribe and dispatch; reconnect with back-off for as long as the store is open.

        After every (re)subscription all waiters re-check, since messages sent
        while it was down are lost.
        """
        pattern = _glob_escape(self._keys.done_prefix) + "*"
        delay = RETRY_MIN
        while True:
            client = self._link.client()
            assert not self._link.cluster
            pubsub = client.pubsub()
            try:
                self._link.round_trips += 1
                await pubsub.psubscribe(pattern)
                while True:
                    message = await pubsub.get_message(timeout=30.0)
                    if message is None:
                        continue
                    kind = message.get("type")
                    if kind == "psubscribe":
                        delay = RETRY_MIN
                        self._ready.set()
                        self._wake()
                    elif kind == "pmessage":
                        self._dispatch(message.get("channel"), message.get("data"))
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
    """One subscriber connection to one cluster node, for some shard channels."""

    def __init__(self, owner: ShardNotifier, node: Any) -> None:
        self.owner = owner
        self.name: str = node.name
        self.client = owner._link.subscriber(node)
        self.pubsub = self.client.pubsub()
        #: Channels wanted on this node (subscribed, or being subscribed).
        self.channels: set[bytes] = set()
        # Our own SUNSUBSCRIBEs not yet confirmed, so that one the server sends
        # (its slot moved away) can be told apart.
        self._leaving: dict[bytes, int] = {}
        self.connected = False
        self.closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.task = asyncio.get_running_loop().create_task(self._run())

    def add(self, channel: bytes) -> None:
        self.channels.add(channel)
        if self.connected:
            self._send("SSUBSCRIBE", channel)

    def remove(self, channel: bytes) -> None:
        self.channels.discard(channel)
        if self.connected:
            self._leaving[channel] = self._leaving.get(channel, 0) + 1
            self._send("SUNSUBSCRIBE", channel)

    def _send(self, command: str, channel: bytes) -> None:
        # From the caller's task, while _run reads the replies: a failure here
        # shows there too, as a lost connection.
        async def send() -> None:
            self.owner._link.round_trips += 1
            with contextlib.suppress(Exception):
                if command == "SSUBSCRIBE":
                    await self.pubsub.ssubscribe(channel)
                else:
                    await self.pubsub.sunsubscribe(channel)

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self) -> None:
        try:
            # Whatever was added before the connection exists, in one command per slot.
            first = sorted(self.channels)
            self.owner._link.round_trips += len(first)
            for channel in first:
                await self.pubsub.ssubscribe(channel)
            self.connected = True
            for channel in self.channels.difference(first):
                self._send("SSUBSCRIBE", channel)
            while self.channels or self.pubsub.subscribed or self._leaving:
                message = await self.pubsub.get_message(timeout=30.0)
                if message is not None:
                    self._handle(message)
        except UNAVAILABLE as exc:
            _log.debug("robotgate: shard subscriber on %s lost: %s", self.name, exc)
        except Exception as exc:
            if "unknown command" in str(exc).lower():
                self.owner.unsupported = True
                _log.info("robotgate: no sharded pub/sub on %s; waiters poll", self.name)
            else:
                _log.debug("robotgate: shard subscriber on %s ended: %r", self.name, exc)
        finally:
            self.closed = True
            self.connected = False
            self.owner._node_gone(self)
            for task in self._tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                await self.pubsub.aclose()  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                await self.client.aclose()

    def _handle(self, message: dict[str, Any]) -> None:
        kind, channel = message.get("type"), message.get("channel")
        if not isinstance(channel, bytes):
            return
        if kind == "smessage":
            self.owner._dispatch(channel, message.get("data"))
        elif kind == "ssubscribe":
            if channel in self.channels:
                self.owner._confirmed(self, channel)
        elif kind == "sunsubscribe":
            if self._leaving.get(channel):
                self._leaving[channel] -= 1
                if not self._leaving[channel]:
                    del self._leaving[channel]
            elif channel in self.channels:
                # The server dropped it: the slot moved to another node.
                self.channels.discard(channel)
                self.owner._unplace(self, channel)

    async def close(self) -> None:
        if not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


class ShardNotifier(Notifier):
    """Redis Cluster: sharded pub/sub, one subscriber per node, channels on demand."""

    def __init__(self, link: Link, keys: Keys) -> None:
        super().__init__(link, keys)
        self._nodes: dict[str, _NodeSubscriber] = {}
        self._placed: dict[bytes, _NodeSubscriber] = {}
        self._ready: dict[bytes, asyncio.Event] = {}
        #: Set once a node answers SSUBSCRIBE with "unknown command" (Redis < 7).
        self.unsupported = False

    def listening_for(self, origin: str) -> bool:
        ready = self._ready.get(self._channel(origin))
        return ready is not None and ready.is_set()

    @property
    def listening(self) -> bool:
        return any(node.connected for node in self._nodes.values())

    async def listen_for(self, origin: str, wait: float) -> None:
        channel = self._channel(origin)
        if self.closed or self.unsupported or channel not in self._waiters:
            return
        placed = self._placed.get(channel)
        if placed is None or placed.closed:
            try:
                node = self._link.node_for(channel.decode())
            except Exception:  # layout unknown right now: poll, try again later
                return
            if node is None:
                return
            subscriber = self._nodes.get(node.name)
            if subscriber is None or subscriber.closed:
                subscriber = self._nodes[node.name] = _NodeSubscriber(self, node)
            self._placed[channel] = subscriber
            self._ready[channel] = asyncio.Event()
            subscriber.add(channel)
        ready = self._ready.get(channel)
        if ready is not None and not ready.is_set() and wait > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ready.wait(), min(wait, SUBSCRIBE_WAIT))

    async def close(self) -> None:
        self.closed = True
        nodes, self._nodes = list(self._nodes.values()), {}
        for node in nodes:
            await node.close()
        self._placed.clear()
        self._ready.clear()

    def _forget(self, channel: bytes) -> None:
        placed = self._placed.pop(channel, None)
        self._ready.pop(channel, None)
        if placed is not None and not placed.closed:
            placed.remove(channel)

    def _confirmed(self, node: _NodeSubscriber, channel: bytes) -> None:
        if self._placed.get(channel) is node:
            ready = self._ready.get(channel)
            if ready is not None:
                ready.set()
            # Messages sent before the subscription are lost: look now.
            self._wake([channel])

    def _unplace(self, node: _NodeSubscriber, channel: bytes) -> None:
        if self._placed.get(channel) is node:
            del self._placed[channel]
            self._ready.pop(channel, None)
            self._wake([channel])

    def _node_gone(self, node: _NodeSubscriber) -> None:
        if self._nodes.get(node.name) is node:
            del self._nodes[node.name]
        for channel in list(node.channels):
            self._unplace(node, channel)
