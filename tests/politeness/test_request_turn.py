"""RequestTurn (politeness/request_turn.py): one request's turn as every client adapter
drives it, and ``sent_in_turn``.  The fast path (cached, allowed, due) must start the
server's turn at once, without a coroutine; with fakes (no HTTP client, a fake clock:
tests/support/request_path.py)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import time

import pytest

from robotgate import RobotGate
from robotgate.errors import Disallowed
from robotgate.policy.hops import REFUSED
from robotgate.policy.provenance import INPUT, pointer_of
from robotgate.politeness.fleet_slots import LateSlot, Slot
from robotgate.politeness.request_turn import Answer, RequestTurn, answer_of, sent_in_turn
from robotgate.politeness.robots_pacing import RobotsPacing
from robotgate.politeness.scheduler import Group
from tests.support.clock import Clock
from tests.support.request_path import (
    A,
    Calls,
    Transport,
    begun,
    build,
    group_of,
    pending,
    run,
    still_waiting,
    transport_of,
)
from tests.support.slots_store import SlotsNow

# -- the fast path ---------------------------------------------------------------------


async def test_cached_allowed_and_due_is_synchronous() -> None:
    clock = Clock()
    parts = build(clock, delay=1.0)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    got = begun(parts.requests.turn(A + "/page", INPUT))
    assert isinstance(got, Group) and not inspect.isawaitable(got)
    assert got.active == 1 and got.key == "host:a.example"
    assert parts.servers.answered(got, 200, None) is None
    parts.servers.done(got)
    clock.advance(1.0)
    again = begun(parts.requests.turn(A + "/other", INPUT))
    assert again is got  # the same group, started again without a coroutine
    parts.servers.done(again)


async def test_not_yet_due_gives_an_awaitable_that_waits() -> None:
    clock = Clock()
    parts = build(clock, delay=0.05)
    await parts.verdicts.site(A)
    clock.advance(0.05)
    await run(parts, A + "/1")
    got = begun(parts.requests.turn(A + "/2", INPUT))
    assert inspect.isawaitable(got)
    async with pending(got) as task:
        assert await still_waiting(task)
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    assert group.active == 1
    parts.servers.done(group)


async def test_an_uncached_origin_fetches_robots_once_then_paces_from_its_answer() -> None:
    clock = Clock()
    transport = Transport(clock, takes=5.0)  # robots.txt answers 5 s later
    parts = build(clock, transport=transport, delay=0.05)
    got = begun(parts.requests.turn(A + "/page", INPUT))
    assert inspect.isawaitable(got)
    async with pending(got) as task:
        assert await still_waiting(task)  # the robots.txt answer was the last request
        assert len(transport.requests) == 1
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    parts.servers.done(group)
    assert len(transport.requests) == 1
    assert group.state.visits == 1  # the robots.txt request is not a visit


async def test_robots_txt_of_a_sibling_origin_waits_its_turn() -> None:
    # http and https of one host share one budget; robots.txt requests count too.
    clock = Clock()
    transport = Transport(clock)
    parts = build(clock, transport=transport, delay=0.05)
    await parts.verdicts.site(A)
    clock.advance(0.05)
    await run(parts, A + "/page")
    sibling = begun(parts.requests.turn("https://a.example/page", INPUT))
    async with pending(sibling) as task:
        assert await still_waiting(task)
        assert len(transport.requests) == 1  # https's robots.txt not asked yet
        clock.advance(0.05)
        for _ in range(100):
            if len(transport.requests) == 2:
                break
            await asyncio.sleep(0.01)
        assert len(transport.requests) == 2
        assert await still_waiting(task)  # and the page waits after the robots.txt
        clock.advance(0.05)
        group = await asyncio.wait_for(task, 10)
    parts.servers.done(group)


async def test_fleet_always_takes_the_slow_path() -> None:
    clock = Clock()
    parts = build(clock, delay=0.0, slots=SlotsNow())
    await parts.verdicts.site(A)
    got = begun(parts.requests.turn(A + "/page", INPUT))
    assert inspect.isawaitable(got)
    group = await asyncio.wait_for(group_of(got), 10)
    parts.servers.done(group)
# -- the request turn: what every client adapter drives --------------------------------


async def test_a_cached_due_turn_begins_without_a_coroutine_and_gives_its_slot_back_once(
) -> None:
    parts = build(Clock(), delay=0.0)
    await parts.verdicts.site(A)
    turn = parts.requests.turn(A + "/1", INPUT)
    assert turn.begin() is None  # cached, allowed, due: no coroutine
    group = turn.group
    assert group is not None and group.busy == 1
    assert turn.leaving() is None and turn.sent_at is not None
    assert turn.answered(200, None) is None
    turn.release()
    turn.release()  # a second release (an error path after the first) gives nothing back
    assert group.free == group.size and group.active == 0
    assert turn.answered(503, None) is None  # released: the answer teaches nothing more


async def test_a_turn_that_would_wait_can_be_abandoned_and_takes_unpaced() -> None:
    parts = build(Clock(), delay=0.0)
    await parts.verdicts.site(A)
    first = parts.requests.turn(A + "/1", INPUT)
    assert first.begin() is None
    second = parts.requests.turn(A + "/2", INPUT)
    ready = second.begin()
    assert ready is not None  # one request at a time to a server: the first holds it
    second.abandon(ready)
    gc.collect()  # a coroutine left unawaited would warn here (-W error)
    group = first.group
    assert group is not None and group.waiting == 0 and second.group is None
    first.release()


async def test_a_turn_judges_its_redirect_before_robots_txt_and_drops_credentials() -> None:
    parts = build(Clock(), delay=0.0)
    looked_up: list[str] = []

    async def resolve(host: str) -> list[str]:
        looked_up.append(host)
        return {"www.example.com": ["93.184.216.34"], "intranet.test": ["10.0.0.7"]}[host]

    turn = parts.requests.turn("http://user:pw@intranet.test/admin#top",
                                pointer_of("http://www.example.com/"), resolve)
    ready = turn.begin()
    assert ready is not None
    with pytest.raises(Disallowed) as refused:
        await ready
    assert refused.value.decision.outcome == REFUSED
    assert refused.value.url == "http://intranet.test/admin"  # no credentials, no fragment
    assert looked_up == ["www.example.com", "intranet.test"]
    assert transport_of(parts).requests == []  # the target's robots.txt was never asked
    allowed = parts.requests.turn(A + "/1", pointer_of("http://www.example.com/"), None)
    # No resolver: a name that cannot be looked up is refused, never followed blindly.
    with pytest.raises(Disallowed):
        await allowed.begin()  # type: ignore[misc]


def test_a_turn_sends_the_gates_headers() -> None:
    gate = RobotGate("HeadBot/1.0 (+https://example.com/bot)", from_="ops@example.com")
    turn = gate.request_turn("http://a.example/x", INPUT)
    assert dict(turn.headers) == {"User-Agent": "HeadBot/1.0 (+https://example.com/bot)",
                                  "From": "ops@example.com"}


async def test_a_slot_found_past_at_the_last_look_is_followed_by_the_next_one() -> None:
    store = SlotsNow()
    parts = build(Clock(), store=store, delay=1.0, slots=store)
    await parts.verdicts.site(A)
    turn = parts.requests.turn(A + "/1", INPUT)
    await turn.begin()  # type: ignore[misc]
    leaving = turn.leaving()
    assert leaving is not None
    await leaving
    first = turn.slot
    assert first is not None and turn.sent_at is not None
    reserved = store.reserved
    await turn.missed()  # the client's last look found the slot past: nothing was sent
    leaving = turn.leaving()
    assert leaving is not None
    await leaving
    # The request leaves in the next slot, which the client can look at again.
    assert turn.slot is not None and turn.slot is not first
    assert store.reserved == reserved + 1
    fleet = parts.servers.fleet
    assert fleet is not None and fleet.late == 1
    turn.release()


class LateOnce(SlotsNow):
    """Grants every slot at once; the first grant reaches a loop that then runs late."""

    async def reserve(self, origin: str, interval: float, slack: float = 0.0) -> float:
        wait = await super().reserve(origin, interval)
        if self.reserved == 1:
            time.sleep(0.05)  # the loop stands still: past the slot's slack (0.01 s)
        return wait


async def test_a_robots_txt_request_late_for_its_fleet_slot_takes_the_next() -> None:
    # A robots.txt request is a request to the server: in a fleet it leaves within
    # its slot as a page does, or the slot is given up and the next one awaited.
    store = LateOnce()
    parts = build(Clock(), store=store, delay=1.0, slots=store)
    async with RobotsPacing(parts.servers, A):
        pass
    fleet = parts.servers.fleet
    assert fleet is not None
    assert store.reserved == 2 and fleet.late == 1
    group = parts.servers.known_group(A)
    assert group is not None and group.active == 0 and group.free == group.size


# -- sent_in_turn: the steps every adapter but Scrapy drives through it -------------------


async def test_sent_in_turn_sends_again_in_the_next_slot_when_the_last_look_finds_it_past(
) -> None:
    store = SlotsNow()
    parts = build(Clock(), store=store, delay=1.0, slots=store)
    await parts.verdicts.site(A)
    turn = parts.requests.turn(A + "/1", INPUT)
    slots: list[Slot | None] = []

    async def send(turn: RequestTurn) -> int:
        slots.append(turn.slot)
        if len(slots) == 1:
            raise LateSlot  # the last look: past its deadline, nothing sent
        return 200

    assert await sent_in_turn(turn, Calls(send, answer_of)) == 200
    assert len(slots) == 2 and slots[0] is not None and slots[1] is not slots[0]
    fleet = parts.servers.fleet
    assert fleet is not None and fleet.late == 1
    group = parts.servers.known_group(A)
    assert group is not None and group.active == 0 and turn.group is None  # released


async def test_sent_in_turn_drops_the_response_and_releases_when_hearing_it_fails() -> None:
    parts = build(Clock(), delay=0.0)
    await parts.verdicts.site(A)
    turn = parts.requests.turn(A + "/1", INPUT)
    dropped: list[int] = []

    async def send(turn: RequestTurn) -> int:
        return 200

    def heard(status: int) -> Answer:
        raise RuntimeError("a broken response")

    def drop(status: int) -> None:
        dropped.append(status)

    with pytest.raises(RuntimeError):
        await sent_in_turn(turn, Calls(send, heard, drop))
    group = parts.servers.known_group(A)
    assert dropped == [200] and group is not None and group.active == 0


async def test_sent_in_turn_with_keep_holds_the_server_until_the_caller_releases() -> None:
    parts = build(Clock(), delay=0.0)
    await parts.verdicts.site(A)
    turn = parts.requests.turn(A + "/1", INPUT)

    async def send(turn: RequestTurn) -> int:
        return 200

    await sent_in_turn(turn, Calls(send, answer_of), keep=True)
    group = parts.servers.known_group(A)
    assert group is not None and group.busy == 1  # a streamed body still being read
    turn.release()
    assert group.busy == 0
