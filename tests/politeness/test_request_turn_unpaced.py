"""An unpaced request turn (``paced=False``: a browser's subresource) with fakes: judged
as a page is, holding one of its server's cap slots, waiting while the server rests
after a 429 or 503, teaching the back-off with its own 429 or 503, and not held to
(nor moving) the pages' interval."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from robotgate.errors import Disallowed, GateClosed
from robotgate.events import BackoffStarted, Event, ResponseAnswered, TurnWaited
from robotgate.policy.provenance import INPUT, pointer_of
from robotgate.politeness.emitter import Emitter
from robotgate.politeness.request_turn import RequestTurn
from robotgate.politeness.scheduler import Group
from tests.support.clock import Clock
from tests.support.request_path import (
    A,
    Wired,
    begun,
    build,
    pending,
    run,
    still_waiting,
    transport_of,
)


def unpaced(parts: Wired, url: str) -> RequestTurn:
    """An unpaced request's turn (a browser's subresource) of the caller's input."""
    return parts.requests.turn(url, INPUT, paced=False)


def begun_at_once(turn: RequestTurn) -> Group:
    """The turn begun, which must need no coroutine (cached, allowed, free to go)."""
    assert turn.begin() is None
    assert turn.group is not None
    return turn.group


async def answered(turn: RequestTurn, status: int, retry_after: str | None = None) -> None:
    learnt = turn.answered(status, retry_after)
    if learnt is not None:
        await learnt
    turn.release()


async def test_an_unpaced_turn_is_not_held_to_the_delay_and_leaves_the_pages_interval_alone(
) -> None:
    clock = Clock()
    parts = build(clock, delay=1.0)
    await parts.verdicts.site(A)
    clock.advance(1.0)
    group = await run(parts, A + "/page/1")
    assert parts.servers.scheduler.wait_seconds(group) == pytest.approx(1.0)
    for _ in range(3):  # a page's images, a quarter of the delay apart
        image = unpaced(parts, A + "/img.png")
        assert begun_at_once(image) is group
        assert image.leaving() is None and image.sent_at is not None
        await answered(image, 200)
        clock.advance(0.25)
    assert parts.servers.scheduler.wait_seconds(group) == pytest.approx(0.25)
    assert group.state.visits == 1  # a subresource is no visit
    clock.advance(0.25)
    # The next page is due a delay after the last page, whatever the images did.
    assert isinstance(begun(parts.requests.turn(A + "/page/2", INPUT)), Group)
    parts.servers.done(group)


async def test_an_unpaced_turn_holds_one_of_the_servers_cap_slots() -> None:
    parts = build(Clock(), delay=0.0)  # max_per_host 1
    await parts.verdicts.site(A)
    image = unpaced(parts, A + "/img.png")
    group = begun_at_once(image)
    assert group.busy == 1 and group.active == 1
    # A page (gate.fetch, a navigation) waits while the subresource is in flight ...
    async with pending(begun(parts.requests.turn(A + "/page", INPUT))) as page:
        assert await still_waiting(page)
        await answered(image, 200)
        assert await asyncio.wait_for(page, 10) is group
    # ... and a subresource waits while a page is in flight.
    second = unpaced(parts, A + "/img.png")
    ready = second.begin()
    assert ready is not None
    task = asyncio.ensure_future(ready)
    assert await still_waiting(task)  # type: ignore[arg-type]
    parts.servers.done(group)
    await asyncio.wait_for(task, 10)
    assert second.group is group and group.busy == 1
    second.release()
    assert group.free == group.size and group.active == 0


async def test_an_unpaced_429_with_retry_after_rests_the_server_for_pages_and_subresources(
) -> None:
    clock = Clock()
    parts = build(clock, delay=0.0)
    await parts.verdicts.site(A)
    image = unpaced(parts, A + "/img.png")
    group = begun_at_once(image)
    await answered(image, 429, "2")
    scheduler = parts.servers.scheduler
    assert scheduler.wait_seconds(group) == pytest.approx(2.0)
    assert scheduler.stats["backoffs"] == 1
    async with pending(begun(parts.requests.turn(A + "/page", INPUT))) as page:
        assert await still_waiting(page)
    later = unpaced(parts, A + "/img.png")
    ready = later.begin()
    assert ready is not None
    task = asyncio.ensure_future(ready)
    try:
        assert await still_waiting(task)  # type: ignore[arg-type]
        assert group.busy == 0  # the rest is waited out holding no slot
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    clock.advance(2.0)
    assert begun_at_once(unpaced(parts, A + "/img.png")) is group


async def test_an_unpaced_503_without_retry_after_widens_the_back_off_and_its_200_eases_nothing(
) -> None:
    clock = Clock()
    parts = build(clock, delay=0.5)
    await parts.verdicts.site(A)
    clock.advance(0.5)
    group = await run(parts, A + "/page/1")
    image = unpaced(parts, A + "/img.png")
    assert begun_at_once(image) is group
    await answered(image, 503)
    extra = group.backoff.extra
    assert extra >= 1.0  # twice the delay that was too short, at least the base
    # The server rests for the back-off from that answer: subresources wait too.
    resting = unpaced(parts, A + "/img.png")
    ready = resting.begin()
    assert ready is not None
    resting.abandon(ready)
    clock.advance(extra)
    ok = unpaced(parts, A + "/img.png")
    begun_at_once(ok)
    await answered(ok, 200)
    assert group.backoff.extra == extra  # a subresource's success eases nothing
    await run(parts, A + "/page/2")
    assert group.backoff.extra < extra  # a page's does


async def test_an_unpaced_turn_is_refused_by_robots_txt_like_a_page() -> None:
    parts = build(Clock(), delay=0.0)
    first = unpaced(parts, A + "/private/img.png")  # robots.txt not cached yet
    ready = first.begin()
    assert ready is not None
    with pytest.raises(Disallowed):
        await ready
    with pytest.raises(Disallowed):
        unpaced(parts, A + "/private/img.png").begin()  # cached: at once
    assert parts.verdicts.disallowed == 2
    assert len(transport_of(parts).requests) == 1


async def test_an_unpaced_hops_robots_txt_request_is_guarded_like_a_pages() -> None:
    parts = build(Clock(), delay=0.0)

    async def resolve(host: str) -> list[str]:
        return ["93.184.216.34"]  # every name public

    hop = parts.requests.turn("http://cdn.example/img.png",
                              pointer_of("http://www.example.com/page"), resolve, paced=False)
    ready = hop.begin()
    assert ready is not None
    await ready
    # The target's robots.txt request too must reach a public address where it connects.
    [robots] = transport_of(parts).requests
    assert robots.url == "http://cdn.example/robots.txt" and robots.guard
    assert hop.guard and [str(address) for address in hop.checked] == ["93.184.216.34"]
    hop.release()


async def test_an_unpaced_turns_events_tell_its_wait_and_its_back_off_not_a_visit() -> None:
    clock = Clock()
    heard: list[Event] = []
    parts = build(clock, delay=0.0, events=Emitter([heard.append]))
    await parts.verdicts.site(A)
    page = parts.requests.turn(A + "/page", INPUT)
    await page.begin()  # type: ignore[misc]
    image = unpaced(parts, A + "/img.png")
    ready = image.begin()
    assert ready is not None
    task = asyncio.ensure_future(ready)
    await asyncio.sleep(0.05)
    clock.advance(0.1)
    page.release()  # the image's cap slot frees: it waited 0.1 s for it
    await asyncio.wait_for(task, 10)
    await answered(image, 429, "1")
    kinds = [(type(event).__name__, getattr(event, "reason", getattr(event, "status", None)))
             for event in heard]
    assert ("TurnWaited", "host-cap") in kinds, kinds
    assert ("BackoffStarted", 429) in kinds, kinds
    assert not [event for event in heard if isinstance(event, ResponseAnswered)]
    assert [event.url for event in heard if isinstance(event, TurnWaited)] == [A + "/img.png"]
    assert [event.origin for event in heard if isinstance(event, BackoffStarted)] == [A]


async def test_closing_ends_an_unpaced_wait_with_gate_closed() -> None:
    parts = build(Clock(), delay=0.0)
    await parts.verdicts.site(A)
    page = parts.requests.turn(A + "/page", INPUT)
    assert page.begin() is None
    ready = unpaced(parts, A + "/img.png").begin()
    assert ready is not None and inspect.isawaitable(ready)
    task = asyncio.ensure_future(ready)
    await asyncio.sleep(0.05)
    parts.servers.close()
    with pytest.raises(GateClosed):
        await asyncio.wait_for(task, 10)
    page.release()
    group = page.group or parts.servers.known_group(A)
    assert group is not None and group.free == group.size and group.waiting == 0
