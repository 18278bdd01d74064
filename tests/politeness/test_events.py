"""The gate's events: typed and immutable, told once per happening, never in the way.

The listener is a plain function called synchronously: one that raises, or returns
an awaitable, is counted and logged once; a coroutine function is refused up front.
Nobody listening, no event is built.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket

import pytest

from robotgate import Disallowed, RobotGate
from robotgate.events import (
    WAIT_REASONS,
    BackoffStarted,
    Event,
    ResponseAnswered,
    RobotsFetched,
    StoreTrouble,
    TurnWaited,
    UrlSkipped,
)
from robotgate.politeness.emitter import Emitter, listener_of
from robotgate.redaction import digest
from robotgate.store.memory import MemoryStore
from tests.contract.test_request_paths import (
    AGENT,
    Site,
    public,  # noqa: F401  (the fixture)
)


def test_events_are_immutable_and_carry_time_origin_and_key() -> None:
    event = ResponseAnswered(1.0, "https://example.com", "host:example.com",
                             "https://example.com/a", 200, 0.1)
    assert isinstance(event, Event)
    assert (event.time, event.origin, event.key) == (1.0, "https://example.com",
                                                      "host:example.com")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.status = 500  # type: ignore[misc]
    assert not hasattr(event, "__dict__")  # slotted


def test_a_coroutine_function_or_a_non_callable_is_refused() -> None:
    async def later(event: Event) -> None: ...

    class Later:
        async def __call__(self, event: Event) -> None: ...

    for bad in (later, Later()):
        with pytest.raises(TypeError, match="plain function"):
            listener_of(bad)
    with pytest.raises(TypeError, match="callable"):
        listener_of(42)
    with pytest.raises(TypeError, match="plain function"):
        RobotGate(AGENT, on_event=later)


def test_a_failing_listener_is_counted_and_logged_once_and_the_others_still_hear(
        caplog: pytest.LogCaptureFixture) -> None:
    heard: list[Event] = []

    def broken(event: Event) -> None:
        raise ValueError("oops")

    async def coroutine(event: Event) -> None: ...

    emitter = Emitter([broken, lambda e: coroutine(e), heard.append])
    caplog.set_level(logging.WARNING, logger="robotgate.events")
    event = StoreTrouble(0.0, "", "", "save", "OSError: full")
    for _ in range(3):
        emitter.emit(event)  # the coroutine returned is closed: no "never awaited" warning
    assert heard == [event] * 3
    assert emitter.errors == 6
    [logged] = [r for r in caplog.records if r.name == "robotgate.events"]
    assert "oops" in logged.getMessage()


async def test_nobody_listening_means_no_emitter_anywhere() -> None:
    async with RobotGate(AGENT, metrics=False) as gate:
        assert gate._events is None and gate._requests.events is None
        assert gate._cache.events is None
        assert gate.stats["event_errors"] == 0


async def test_one_gate_fetch_tells_its_story(public: Site) -> None:  # noqa: F811
    heard: list[Event] = []
    async with RobotGate(AGENT, delay=0.1, on_event=heard.append) as gate:
        await gate.fetch(public.url("/a"))
        await gate.fetch(public.url("/status/503?ra=1"))
        with pytest.raises(Exception, match="Disallow"):
            await gate.fetch(public.url("/no/x"))
        key = gate.pace_key(public.url("/"))
    origin = public.url("")
    fetched = [e for e in heard if isinstance(e, RobotsFetched)]
    assert [(e.origin, e.key, e.outcome, e.status) for e in fetched] == [
        (origin, key, "ok", 200)]
    assert fetched[0].size == len(public.robots.encode()) and fetched[0].seconds >= 0
    answers = [(e.url, e.status, e.key) for e in heard if isinstance(e, ResponseAnswered)]
    # An event's url is said: its query's values are digests (docs/secrets.md).
    assert answers == [(public.url("/a"), 200, key),
                       (public.url(f"/status/503?ra={digest('1')}"), 503, key)]
    [backoff] = [e for e in heard if isinstance(e, BackoffStarted)]
    assert backoff.status == 503 and 0.5 < backoff.seconds <= 1.0  # its Retry-After
    [skipped] = [e for e in heard if isinstance(e, UrlSkipped)]
    assert skipped.url == public.url("/no/x") and "Disallow: /no/" in skipped.reason
    waits = [e for e in heard if isinstance(e, TurnWaited)]
    assert waits and all(e.reason in WAIT_REASONS and e.seconds > 0 for e in waits)
    assert all(e.time > 0 for e in heard)


class FullDisk(MemoryStore):
    async def save_robots(self, entry: object) -> None:
        raise OSError("disk full")


async def test_store_trouble_is_told_and_the_crawl_goes_on(public: Site) -> None:  # noqa: F811
    heard: list[Event] = []
    async with RobotGate(AGENT, delay=0.0, store=FullDisk(), on_event=heard.append) as gate:
        resp = await gate.fetch(public.url("/a"))
        assert resp.status == 200
    [trouble] = [e for e in heard if isinstance(e, StoreTrouble)]
    assert trouble.what == "save robots.txt" and trouble.error == "OSError: disk full"
    assert gate.stats["store_errors"] == 1


@pytest.mark.slow
async def test_a_host_capped_wait_says_so(public: Site) -> None:  # noqa: F811
    heard: list[Event] = []
    async with RobotGate(AGENT, delay=0.0, on_event=heard.append) as gate:
        await gate.fetch(public.url("/warm"))
        await asyncio.gather(*(gate.fetch(public.url(f"/p{i}?hold=0.2")) for i in range(2)))
    reasons = {e.reason for e in heard if isinstance(e, TurnWaited)}
    assert reasons == {"host-cap"}, reasons


def dead_url(path: str = "/x") -> str:
    """A URL of a loopback port nobody listens on: connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


async def test_an_unreachable_robots_txt_is_told_apart_from_a_rule_with_its_error(
        public: Site) -> None:  # noqa: F811
    heard: list[Event] = []
    dead = dead_url()
    async with RobotGate(AGENT, delay=0.0, on_event=heard.append) as gate:
        decision = await gate.decide(dead)
        with pytest.raises(Disallowed) as refused:
            await gate.fetch(dead)
        with pytest.raises(Disallowed):
            await gate.fetch(public.url("/no/x"))
        summary = await gate.crawl([dead + "y", public.url("/no/y"), public.url("/a")],
                                   lambda url, resp: None)
    # Disallowed all the same (RFC 9309), but said as what happened, with the error.
    assert not decision.allowed and decision.unreachable and decision.outcome == "unreachable"
    assert decision.error is not None and "Connect" in decision.error
    assert refused.value.decision.unreachable and refused.value.decision.error
    [fetched] = [e for e in heard if isinstance(e, RobotsFetched) and e.origin in dead]
    assert fetched.outcome == "unreachable" and fetched.error == decision.error
    skips = {e.url: e for e in heard if isinstance(e, UrlSkipped)}
    assert skips[dead].unreachable and skips[dead].error == decision.error
    rule = skips[public.url("/no/x")]
    assert not rule.unreachable and rule.outcome == "rules" and rule.error == ""
    assert (summary.pages, summary.skipped, summary.unreachable) == (1, 1, 1)
    assert summary.host(gate.pace_key(dead)).unreachable == 1
    [(origin, reason)] = summary.skipped_origins.items()
    assert dead.startswith(origin) and decision.error in reason
