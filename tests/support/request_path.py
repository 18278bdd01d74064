"""Fakes for the request path's parts (verdicts.py, servers.py, request_turn.py): no
HTTP client, a fake clock.

:func:`build` wires the robots.txt cache, the politeness keys, the scheduler, the
verdicts, the servers and the request turns the way the gate does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Generic, NamedTuple, TypeVar

from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.pacing import Pacing
from robotgate.policy.provenance import INPUT
from robotgate.policy.site import Interpretation
from robotgate.politeness.emitter import Emitter
from robotgate.politeness.fleet_slots import FleetSlots
from robotgate.politeness.grouping import PaceKeys
from robotgate.politeness.request_turn import Answer, Requests, RequestTurn
from robotgate.politeness.robots_cache import RobotsCache
from robotgate.politeness.robots_fetcher import RobotsFetcher
from robotgate.politeness.robots_pacing import RobotsPacing
from robotgate.politeness.scheduler import Group, Scheduler
from robotgate.politeness.servers import Servers, Started
from robotgate.politeness.verdicts import Verdicts
from robotgate.records import HostState
from robotgate.store.base import Slots, Store
from robotgate.store.memory import MemoryStore
from tests.support.clock import Clock
from tests.support.plain_store import PlainStore

R = TypeVar("R")

AGENT = "AdmitBot/1.0"
A = "http://a.example"
ROBOTS = b"User-agent: *\nDisallow: /private\n"


class Calls(Generic[R]):
    """A :class:`~robotgate.politeness.request_turn.TurnSender` of three functions."""

    def __init__(self, send: Callable[[RequestTurn], Awaitable[R]],
                 answer: Callable[[R], Answer],
                 drop: Callable[[R], Awaitable[None] | None] = lambda response: None) -> None:
        self.send = send
        self.answer = answer
        self.drop = drop


class Transport:
    """robots.txt per host from a table (default ROBOTS); may take fake time to answer."""

    def __init__(self, clock: Clock, bodies: dict[str, bytes] | None = None,
                 takes: float = 0.0) -> None:
        self.clock = clock
        self.bodies = bodies or {}
        self.takes = takes
        self.statuses: dict[str, int] = {}  # robots.txt status per host (default 200)
        self.requests: list[RobotsRequest] = []

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        self.requests.append(request)
        self.clock.advance(self.takes)
        origin = request.url.rsplit("/", 1)[0]
        return RobotsResponse(self.statuses.get(origin, 200), {}, self.bodies.get(origin, ROBOTS))


class DictStore(PlainStore):
    """A non-memory store (so the servers save their state), optionally failing."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.host_saves = 0

    async def save_host(self, state: HostState) -> None:
        self.host_saves += 1
        if self.fail:
            raise OSError(28, "No space left on device")
        await super().save_host(state)


class Wired(NamedTuple):
    """The verdicts, the servers and what the request turns share, wired as the gate
    wires them."""

    verdicts: Verdicts
    servers: Servers
    requests: Requests


def begun(turn: RequestTurn) -> Group | Awaitable[Started]:
    """``turn`` begun: its started Group when it may go at once, else an awaitable of
    the Group and the fleet slot it holds."""
    ready = turn.begin()
    if ready is None:
        assert turn.group is not None
        return turn.group
    return _started(turn, ready)


async def _started(turn: RequestTurn, ready: Awaitable[None]) -> Started:
    await ready
    assert turn.group is not None
    return turn.group, turn.slot


def build(clock: Clock, *, store: Store | None = None, transport: Transport | None = None,
          delay: float = 1.0, pacing: Pacing | None = None, slots: Slots | None = None,
          recheck_visits: int | None = 1000, max_groups: int = 100_000,
          dialect: str = "rfc9309", events: Emitter | None = None) -> Wired:
    store = store if store is not None else MemoryStore()
    pacing = pacing or Pacing(delay=delay)
    sched = Scheduler(pacing, clock=clock, wall=clock.now_wall, max_groups=max_groups)
    transport = transport or Transport(clock)
    keys = PaceKeys("host")
    fleet = FleetSlots(slots) if slots is not None else None
    shared, at_once = store.fleet(), store.at_once()

    def robots(servers: Servers) -> RobotsCache:
        return RobotsCache(RobotsFetcher(transport, FetchPolicy()), store,
                           Interpretation(AGENT, dialect, pacing=pacing),
                           fleet=shared, at_once=at_once,
                           host_state=servers.host_state,
                           paced_by=functools.partial(RobotsPacing, servers),
                           recheck_visits=recheck_visits, events=events)

    servers = Servers(keys, sched, store, fleet, robots=robots, shared=shared,
                      at_once=at_once, events=events)
    verdicts = Verdicts(servers.cache, keys, AGENT, fleet, events=events)
    return Wired(verdicts, servers, Requests(verdicts, servers, events=events))


def transport_of(parts: Wired) -> Transport:
    return parts.verdicts.cache.fetcher.transport  # type: ignore[return-value]


async def run(parts: Wired, url: str, status: int = 200) -> Group:
    """One whole request: its turn begun (awaiting if it must), answered, done."""
    got = begun(parts.requests.turn(url, INPUT))
    group = got if isinstance(got, Group) else await asyncio.wait_for(group_of(got), 10)
    pending = parts.servers.answered(group, status, None)
    if pending is not None:
        await pending
    parts.servers.done(group)
    return group


async def group_of(got: Awaitable[Started]) -> Group:
    """The group of a turn that had to wait (its fleet slot aside)."""
    group, _ = await got
    return group


@contextlib.asynccontextmanager
async def pending(got: Group | Awaitable[Started]) -> AsyncIterator[asyncio.Future[Group]]:
    """Run a turn that must wait in a task; cancel it if the test leaves it waiting."""
    assert not isinstance(got, Group), "started at once, but it had to wait"
    task = asyncio.ensure_future(group_of(got))
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def still_waiting(task: asyncio.Future[Group]) -> bool:
    await asyncio.sleep(0.05)  # real time; the fake clock stands still
    return not task.done()
