"""One test suite for the storage interface, run against every backend.

Adding a backend is one entry in ``BACKENDS``: an async function that, given
the test's scratch directory, opens a new handle on that test's data.  Shared
backends (those whose ``store.fleet()`` hands out a fleet part) must give handles
that see each other's writes, and their fleet part (locks, waiting, pauses, and
the slots where it hands them out) is tested here; the others have none.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from robotgate.records import SMALL_BODY
from robotgate.store.base import Fleet, HostState, Outcome, RobotsEntry, Store
from robotgate.store.memory import MemoryStore
from robotgate.store.sqlite import SQLiteStore
from tests.support.entries import ok_entry

Opener = Callable[[Path], Awaitable[Store]]
StoreFactory = Callable[[], Awaitable[Store]]


async def _memory(tmp_path: Path) -> Store:
    return MemoryStore()


async def _sqlite(tmp_path: Path) -> Store:
    # A short interval so that background flushes happen within the tests.
    return SQLiteStore(tmp_path / "store.sqlite3", flush_interval=0.05, flush_batch=50)


async def _redis(tmp_path: Path, cluster: bool = False) -> Store:
    from robotgate.store.redis import RedisStore

    # The session's server or cluster (see conftest.py); a prefix per test,
    # derived from its scratch directory, so every handle of one test shares
    # data and no two tests do.
    digest = hashlib.sha1(str(tmp_path).encode()).hexdigest()[:16]
    return RedisStore(
        _redis_urls[tmp_path],
        prefix=f"rgtest:{digest}",
        cluster=cluster,
        unavailable_timeout=5.0,
        flush_interval=0.05,
        flush_batch=50,
    )


async def _redis_cluster(tmp_path: Path) -> Store:
    return await _redis(tmp_path, cluster=True)


# The redis_url (or redis_cluster) fixture's value for each test using a Redis backend.
_redis_urls: dict[Path, str] = {}


BACKENDS: dict[str, Opener] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "redis": _redis,
    "redis-cluster": _redis_cluster,
}
# Which session fixture each Redis backend needs.
_REDIS_FIXTURES = {"redis": "redis_url", "redis-cluster": "redis_cluster"}


# A Redis Cluster makes every test slow (seconds of setup and cross-slot calls).
@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.slow) if name == "redis-cluster"
                        else name for name in BACKENDS])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Opens handles on this test's data; closes them all afterwards."""
    opener = BACKENDS[request.param]
    if request.param in _REDIS_FIXTURES:
        # Starts the session's redis-server (or cluster), or skips when there is none.
        _redis_urls[tmp_path] = request.getfixturevalue(_REDIS_FIXTURES[request.param])
    handles: list[Store] = []

    async def factory() -> Store:
        store = await opener(tmp_path)
        handles.append(store)
        await store.open()
        return store

    yield factory
    for store in handles:
        await store.close()
    _redis_urls.pop(tmp_path, None)


@pytest.fixture
async def store(open_store: StoreFactory) -> Store:
    return await open_store()


async def other_handle(store: Store, open_store: StoreFactory) -> Store:
    """A second handle on the same data, for shared backends only."""
    fleet_of(store)
    return await open_store()


def fleet_of(store: Store) -> Fleet:
    """The store's fleet part, for shared backends only."""
    fleet = store.fleet()
    if fleet is None:
        pytest.skip(f"{type(store).__name__} is not shared between handles")
    return fleet


def entry(origin: str = "https://example.com", **changes: object) -> RobotsEntry:
    return ok_entry(origin, b"User-agent: *\nDisallow: /private\n", fresh_for=86_400).copy(
        **changes)


# -- robots entries --------------------------------------------------------


async def test_missing_is_none(store: Store) -> None:
    assert await store.load_robots("https://nowhere.example") is None
    assert await store.load_host("https://nowhere.example") is None


async def test_robots_round_trip_every_field(store: Store) -> None:
    full = RobotsEntry(
        origin="https://full.example:8443",
        outcome=Outcome.OK,
        fetched_at=1_700_000_000.123456,
        fresh_until=1_700_086_400.5,
        status=200,
        body=bytes(range(256)) + b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /\x00",
        content_type="text/plain; charset=utf-8",
        etag='W/"abc-123"',
        last_modified="Tue, 14 Nov 2023 22:13:20 GMT",
        failures=3,
        final_url="https://www.full.example:8443/robots.txt",
        detail="redirected twice → ok · 日本語",
        good_at=1_699_999_000.25,
    )
    await store.save_robots(full)
    assert await store.load_robots(full.origin) == full


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [None, b"", b"\x00\xff\xfe binary \x80", b"x" * 600_000],
    ids=["none", "empty", "binary", "large"],
)
async def test_robots_body_kinds(store: Store, body: bytes | None) -> None:
    saved = entry(body=body)
    await store.save_robots(saved)
    loaded = await store.load_robots(saved.origin)
    assert loaded is not None
    assert loaded.body == body
    assert type(loaded.body) is type(body)


async def test_robots_optional_fields_none(store: Store) -> None:
    bare = RobotsEntry(
        origin="http://bare.example",
        outcome=Outcome.UNREACHABLE,
        fetched_at=10.0,
        fresh_until=20.0,
    )
    await store.save_robots(bare)
    assert await store.load_robots(bare.origin) == bare


async def test_robots_replace(store: Store) -> None:
    await store.save_robots(entry(status=200, etag='"1"'))
    newer = entry(outcome=Outcome.UNAVAILABLE, status=404, body=None, etag=None, failures=1)
    await store.save_robots(newer)
    assert await store.load_robots(newer.origin) == newer


async def test_robots_origins_are_separate(store: Store) -> None:
    a = entry("https://a.example", body=b"a")
    b = entry("https://b.example", body=b"b")
    await store.save_robots(a)
    await store.save_robots(b)
    assert await store.load_robots("https://a.example") == a
    assert await store.load_robots("https://b.example") == b
    assert await store.load_robots("https://a.example:443") is None


# -- host state ------------------------------------------------------------


async def test_host_state_keys_are_opaque(store: Store) -> None:
    # The gate keys host state by politeness group; stores never parse the key.
    keys = ["host:example.com", "domain:example.co.uk", "ip:127.0.0.1", "ip:::1",
            "http://example.com:8080", "host:{odd}%7B"]
    for n, key in enumerate(keys):
        await store.save_host(HostState(key, visits=n, next_allowed=float(n)))
    await store.flush()
    for n, key in enumerate(keys):
        assert await store.load_host(key) == HostState(key, visits=n, next_allowed=float(n))
    fleet = store.fleet()
    if fleet is not None:
        await fleet.pause("host:example.com", time.time() + 60)
    assert await store.load_host("host:example") is None
    slots = fleet.slots() if fleet is not None else None
    if slots is not None:
        assert await slots.reserve("ip:127.0.0.1", 0.5) == 0.0


async def test_host_round_trip(store: Store) -> None:
    state = HostState(
        origin="https://h.example",
        visits=7,
        last_visit=1_700_000_000.5,
        next_allowed=1_700_000_002.25,
        visits_since_check=3,
        backoff=1.5,
        backoff_peak=2.25,
    )
    await store.save_host(state)
    assert await store.load_host(state.origin) == state
    await store.flush()
    assert await store.load_host(state.origin) == state


async def test_host_defaults_round_trip(store: Store) -> None:
    state = HostState(origin="https://d.example")
    await store.save_host(state)
    await store.flush()
    assert await store.load_host(state.origin) == state


async def test_host_replace(store: Store) -> None:
    await store.save_host(HostState("https://h.example", visits=1, last_visit=1.0))
    await store.save_host(HostState("https://h.example", visits=2, last_visit=2.0))
    assert await store.load_host("https://h.example") == HostState(
        "https://h.example", visits=2, last_visit=2.0
    )
    await store.flush()
    assert await store.load_host("https://h.example") == HostState(
        "https://h.example", visits=2, last_visit=2.0
    )


async def test_unflushed_host_state_visible_to_own_handle(store: Store) -> None:
    # Batched writes must never hide a save from the process that made it.
    for i in range(120):
        await store.save_host(HostState(f"https://h{i}.example", visits=i))
    for i in range(120):
        state = await store.load_host(f"https://h{i}.example")
        assert state is not None and state.visits == i


async def test_flush_makes_host_state_visible_to_others(
    store: Store, open_store: StoreFactory
) -> None:
    other = await other_handle(store, open_store)
    await store.save_host(HostState("https://h.example", visits=5))
    await store.flush()
    assert await other.load_host("https://h.example") == HostState("https://h.example", visits=5)


async def test_background_flush(store: Store, open_store: StoreFactory) -> None:
    other = await other_handle(store, open_store)
    await store.save_host(HostState("https://bg.example", visits=1))
    # No explicit flush: the store writes batches on its own, soon.
    deadline = time.monotonic() + 3.0
    while await other.load_host("https://bg.example") is None:
        assert time.monotonic() < deadline, "batched host state never written"
        await asyncio.sleep(0.02)


async def test_close_flushes_and_is_idempotent(store: Store, open_store: StoreFactory) -> None:
    await store.save_host(HostState("https://c.example", visits=9))
    await store.close()
    await store.close()
    if store.fleet() is not None:
        reopened = await open_store()
        assert await reopened.load_host("https://c.example") == HostState(
            "https://c.example", visits=9
        )


async def test_flush_with_nothing_pending(store: Store) -> None:
    await store.flush()
    await store.flush()


async def test_concurrent_tasks(store: Store) -> None:
    async def worker(n: int) -> None:
        for i in range(20):
            origin = f"https://w{n}-{i}.example"
            await store.save_robots(entry(origin, body=origin.encode()))
            await store.save_host(HostState(origin, visits=i))

    await asyncio.gather(*(worker(n) for n in range(5)))
    await store.flush()
    for n in range(5):
        for i in range(20):
            origin = f"https://w{n}-{i}.example"
            loaded = await store.load_robots(origin)
            assert loaded is not None and loaded.body == origin.encode()
            assert await store.load_host(origin) == HostState(origin, visits=i)


async def test_two_handles_share_robots(store: Store, open_store: StoreFactory) -> None:
    other = await other_handle(store, open_store)
    first = entry("https://one.example", body=b"from the first handle")
    await store.save_robots(first)
    assert await other.load_robots(first.origin) == first
    second = entry("https://two.example", body=b"from the second handle")
    await other.save_robots(second)
    assert await store.load_robots(second.origin) == second


# -- the fleet part -----------------------------------------------------------


@pytest.mark.slow
async def test_lock_fetch_exclusive(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    origin = "https://lock.example"
    token = await fleet.lock_fetch(origin, 30)
    assert token is not None
    other = fleet_of(await other_handle(store, open_store))
    assert await fleet.lock_fetch(origin, 30) is None
    assert await other.lock_fetch(origin, 30) is None
    # Other origins are unaffected.
    assert await other.lock_fetch("https://else.example", 30) is not None
    await fleet.unlock_fetch(origin, token)
    again = await other.lock_fetch(origin, 30)
    assert again is not None and again != token


async def test_unlock_with_wrong_token_keeps_lock(store: Store) -> None:
    fleet = fleet_of(store)
    origin = "https://lock.example"
    token = await fleet.lock_fetch(origin, 30)
    assert token is not None
    await fleet.unlock_fetch(origin, "not-the-token")
    assert await fleet.lock_fetch(origin, 30) is None
    await fleet.unlock_fetch(origin, token)
    assert await fleet.lock_fetch(origin, 30) is not None


async def test_lock_load_gives_the_entry_and_the_save_releases_the_lock(store: Store) -> None:
    fleet = fleet_of(store)
    origin = "https://lockload.example"
    token, got = await fleet.lock_load(origin, 30)
    assert token is not None and got is None
    await store.save_robots(entry(origin))
    held, got = await fleet.lock_load(origin, 30)
    assert held is None and got is not None and got.body == entry(origin).body
    await fleet.save_robots_unlock(entry(origin, status=203), "not-the-token")
    assert await fleet.lock_fetch(origin, 30) is None  # not ours: still held
    await fleet.save_robots_unlock(entry(origin, status=204), token)
    saved = await store.load_robots(origin)
    assert saved is not None and saved.status == 204
    assert await fleet.lock_fetch(origin, 30) is not None


@pytest.mark.slow
async def test_lock_expires(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    other = fleet_of(await other_handle(store, open_store))
    origin = "https://expire.example"
    token = await fleet.lock_fetch(origin, 0.2)
    assert token is not None
    assert await other.lock_fetch(origin, 0.2) is None
    await asyncio.sleep(0.3)
    taken = await other.lock_fetch(origin, 30)
    assert taken is not None and taken != token
    # The expired holder's unlock must not release the new holder's lock.
    await fleet.unlock_fetch(origin, token)
    assert await fleet.lock_fetch(origin, 30) is None


@pytest.mark.slow
async def test_a_holder_whose_lock_was_taken_saves_nothing(
    store: Store, open_store: StoreFactory
) -> None:
    # Its lock expired under it (a starved worker) and another worker took it: that
    # one's fetch is saved, and its lock stays.
    fleet = fleet_of(store)
    other = fleet_of(await other_handle(store, open_store))
    origin = "https://lost-lock.example"
    token = await fleet.lock_fetch(origin, 0.2)
    assert token is not None
    await asyncio.sleep(0.3)
    taken = await other.lock_fetch(origin, 30)
    assert taken is not None
    assert await fleet.renew_fetch(origin, token, 30) is False
    assert await fleet.save_robots_unlock(entry(origin, status=203), token) is False
    assert await store.load_robots(origin) is None
    assert await fleet.lock_fetch(origin, 30) is None  # still the other's
    assert await other.save_robots_unlock(entry(origin, status=204), taken) is True
    saved = await store.load_robots(origin)
    assert saved is not None and saved.status == 204


async def test_renewed_lock_outlives_its_first_ttl(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    other = fleet_of(await other_handle(store, open_store))
    origin = "https://renew.example"
    token = await fleet.lock_fetch(origin, 0.3)
    assert token is not None
    await asyncio.sleep(0.15)
    assert await fleet.renew_fetch(origin, token, 0.5) is True
    await asyncio.sleep(0.25)  # past the first ttl, within the renewed one
    assert await other.lock_fetch(origin, 30) is None
    assert await other.renew_fetch(origin, "not-the-token", 30) is False
    await asyncio.sleep(0.35)
    taken = await other.lock_fetch(origin, 30)
    assert taken is not None
    # Lapsed and taken: the old holder cannot renew it.
    assert await fleet.renew_fetch(origin, token, 30) is False


async def test_wait_robots_sees_entry_saved_meanwhile(
    store: Store, open_store: StoreFactory
) -> None:
    fleet = fleet_of(store)
    origin = "https://wait.example"
    other = await other_handle(store, open_store)

    async def fetcher() -> RobotsEntry:
        await asyncio.sleep(0.15)
        saved = entry(origin, body=b"fetched by the lock holder")
        await other.save_robots(saved)
        return saved

    started = time.monotonic()
    waited, saved = await asyncio.gather(fleet.wait_robots(origin, 5), fetcher())
    assert waited == saved
    assert time.monotonic() - started < 2.5  # woken by the save, not its 5 s timeout


async def test_wait_robots_replaces_stale_entry(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    origin = "https://stale.example"
    await store.save_robots(entry(origin, fetched_at=1.0, fresh_until=2.0, body=b"old"))
    other = await other_handle(store, open_store)

    async def fetcher() -> None:
        await asyncio.sleep(0.1)
        # Fetched now, even if immediately stale (max-age=0): still the answer.
        now = time.time()
        await other.save_robots(entry(origin, fetched_at=now, fresh_until=now, body=b"new"))

    waited, _ = await asyncio.gather(fleet.wait_robots(origin, 5), fetcher())
    assert waited is not None and waited.body == b"new"


async def test_wait_robots_returns_fresh_entry_at_once(store: Store) -> None:
    fleet = fleet_of(store)
    origin = "https://ready.example"
    saved = entry(origin)
    await store.save_robots(saved)
    started = time.monotonic()
    assert await fleet.wait_robots(origin, 5) == saved
    assert time.monotonic() - started < 2.5  # at once, not after its 5 s timeout


@pytest.mark.slow
async def test_wait_robots_times_out(store: Store) -> None:
    fleet = fleet_of(store)
    origin = "https://never.example"
    await store.save_robots(entry(origin, fetched_at=1.0, fresh_until=2.0))
    started = time.monotonic()
    assert await fleet.wait_robots(origin, 0.25) is None
    assert await fleet.wait_robots("https://absent.example", 0.1) is None
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 2.0


async def test_reserve_returns_wait(store: Store) -> None:
    slots = fleet_of(store).slots()
    if slots is None:
        pytest.skip(f"{type(store).__name__} hands out no fleet slots")
    wait = await slots.reserve("https://pace.example", 1.0)
    assert wait >= 0


@pytest.mark.slow
async def test_pause_raises_next_allowed(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    origin = "https://pause.example"
    until = time.time() + 120
    await store.save_host(HostState(origin, visits=4, next_allowed=10.0))
    await fleet.pause(origin, until)
    state = await store.load_host(origin)
    assert state is not None
    assert state.next_allowed == until
    assert state.visits == 4
    # A shorter pause never shortens a longer one.
    await fleet.pause(origin, until - 60)
    state = await store.load_host(origin)
    assert state is not None and state.next_allowed == until
    # Other handles see it, after the pending visit counts are written too.
    await store.flush()
    other = await other_handle(store, open_store)
    seen = await other.load_host(origin)
    assert seen is not None and seen.next_allowed == until and seen.visits == 4


@pytest.mark.slow
async def test_pause_unknown_host(store: Store, open_store: StoreFactory) -> None:
    fleet = fleet_of(store)
    origin = "https://new.example"
    until = time.time() + 30
    await fleet.pause(origin, until)
    other = await other_handle(store, open_store)
    seen = await other.load_host(origin)
    assert seen is not None and seen.next_allowed == until


# -- backend specifics -----------------------------------------------------


async def test_memory_store_is_bounded() -> None:
    store = MemoryStore(max_origins=3)
    for name in "abc":
        await store.save_robots(entry(f"https://{name}.example"))
        await store.save_host(HostState(f"https://{name}.example"))
    # Touching "a" makes "b" the least recently used.
    assert await store.load_robots("https://a.example") is not None
    assert await store.load_host("https://a.example") is not None
    await store.save_robots(entry("https://d.example"))
    await store.save_host(HostState("https://d.example"))
    assert await store.load_robots("https://b.example") is None
    assert await store.load_host("https://b.example") is None
    for name in "acd":
        assert await store.load_robots(f"https://{name}.example") is not None
        assert await store.load_host(f"https://{name}.example") is not None


def test_memory_store_rejects_zero_bound() -> None:
    with pytest.raises(ValueError):
        MemoryStore(max_origins=0)


async def test_memory_store_hands_out_copies_of_small_and_large_bodies() -> None:
    store = MemoryStore()
    for size in (SMALL_BODY, SMALL_BODY + 1, 50_000):
        body = b"User-agent: *\nDisallow: /x\n" + b"#" * size
        saved = RobotsEntry("https://m.example", Outcome.OK, 1.0, 2.0, 200, body)
        await store.save_robots(saved)
        first = await store.load_robots("https://m.example")
        assert first == saved and first is not saved  # a copy: the caller's to change
        assert first is not None
        first.body = b"changed"
        again = await store.load_robots("https://m.example")
        assert again is not None and again.body == body
