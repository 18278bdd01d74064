"""RedisStore specifics: fleet pacing, locks, pub/sub waiting, foreign data, outages.

The storage interface itself is covered for every backend in
``test_store_contract.py``.  Everything here runs against real redis-server
processes on loopback: most tests twice, on the session's server
(``redis_url``) and on the session's 3-master Redis Cluster
(``redis_cluster``); the outage tests on a server of their own, to stop and
restart it (the cluster's faults are in ``test_redis_cluster.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
import types
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from robotgate.store.base import HostState, Outcome, RobotsEntry, SlotAhead, StoreError
from robotgate.store.redis import FORMAT_VERSION, RedisStore
from testbed.redis_server import MISSING_REASON, RedisServer, find_redis_server

SRC = Path(__file__).resolve().parents[2] / "src"

# Worker process for the pacing test: says "ready", waits for "go", then
# reserves slots for its origins concurrently, sleeping each wait, and prints
# what it was granted and when (server clock) it really started.
PACER = r"""
import asyncio, json, sys
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from robotgate.store.redis import RedisStore

async def main(url, cluster, prefix, origins, count, interval):
    store = RedisStore(url, prefix=prefix, unavailable_timeout=5, cluster=cluster)
    probe = (RedisCluster if cluster else aioredis.Redis).from_url(url)
    await store.open()
    await probe.ping()
    print("ready", flush=True)
    sys.stdin.readline()
    records = []

    async def run(origin):
        for _ in range(count):
            slot = await store.reserve_slot(origin, interval)
            await asyncio.sleep(slot.wait)
            sec, usec = await probe.time()
            records.append([origin, slot.start_us, slot.granted_us, sec * 1_000_000 + usec])

    try:
        await asyncio.gather(*(run(origin) for origin in origins))
    finally:
        await store.close()
        await probe.aclose()
    print(json.dumps(records), flush=True)

url, cluster, prefix = sys.argv[1], sys.argv[2] == "cluster", sys.argv[3]
count, interval = int(sys.argv[4]), float(sys.argv[5])
asyncio.run(main(url, cluster, prefix, sys.argv[6:], count, interval))
"""

# Takes the fetch lock for an origin, says so, then hangs until killed.
HOLDER = r"""
import asyncio, sys
from robotgate.store.redis import RedisStore

async def main(url, cluster, prefix, origin, ttl):
    store = RedisStore(url, prefix=prefix, cluster=cluster)
    token = await store.lock_fetch(origin, ttl)
    print("locked" if token else "busy", flush=True)
    await asyncio.sleep(60)

asyncio.run(main(sys.argv[1], sys.argv[2] == "cluster", sys.argv[3], sys.argv[4],
                 float(sys.argv[5])))
"""

# Says "ready", and on "go" saves a fresh entry for an origin.
SAVER = r"""
import asyncio, sys, time
from robotgate.store.base import RobotsEntry
from robotgate.store.redis import RedisStore

async def main(url, cluster, prefix, origin):
    store = RedisStore(url, prefix=prefix, cluster=cluster)
    await store.open()
    print("ready", flush=True)
    sys.stdin.readline()
    now = time.time()
    await store.save_robots(RobotsEntry(origin, "ok", now, now + 3600, 200, b"from afar"))
    await store.close()
    print("saved", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2] == "cluster", sys.argv[3], sys.argv[4]))
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Works whether or not robotgate is installed in the interpreter.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def entry(origin: str, body: bytes | None = b"User-agent: *\nDisallow: /x\n") -> RobotsEntry:
    now = time.time()
    return RobotsEntry(origin, Outcome.OK, now, now + 3600, 200, body, good_at=now)


@dataclass(frozen=True)
class Target:
    """Where a test runs: the session's redis-server or its Redis Cluster."""

    url: str
    cluster: bool

    @property
    def kind(self) -> str:
        return "cluster" if self.cluster else "server"

    def store(self, prefix: str, **options: Any) -> RedisStore:
        return RedisStore(self.url, prefix=prefix, cluster=self.cluster, **options)


@pytest.fixture(params=["server", "cluster"])
def target(request: pytest.FixtureRequest) -> Target:
    cluster = request.param == "cluster"
    url = request.getfixturevalue("redis_cluster" if cluster else "redis_url")
    return Target(url, cluster)


@pytest.fixture
async def rawt(target: Target) -> AsyncIterator[Any]:
    """A plain client (a cluster client on the cluster), as another application would use."""
    client: Any = (RedisCluster if target.cluster else aioredis.Redis).from_url(target.url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def stores(target: Target, prefix: str) -> AsyncIterator[list[RedisStore]]:
    """Two handles on one prefix, as two workers would have."""
    handles = [
        target.store(prefix, unavailable_timeout=5.0, flush_interval=0.05) for _ in range(2)
    ]
    try:
        for handle in handles:
            await handle.open()
        yield handles
    finally:
        for handle in handles:
            await handle.close()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, to stop and restart."""
    if find_redis_server() is None:
        print(f"\nskipping: {MISSING_REASON}", file=sys.stderr)
        pytest.skip(MISSING_REASON)
    with RedisServer.start(tmp_path) as server:
        yield server


# -- import and packaging ----------------------------------------------------


@pytest.mark.slow
def test_import_robotgate_does_not_import_redis() -> None:
    code = (
        "import sys, robotgate, robotgate.store\n"
        "assert 'redis' not in sys.modules, 'redis imported too early'\n"
        "assert 'robotgate.store.redis' not in sys.modules\n"
        "from robotgate.store import RedisStore\n"
        "assert 'redis' in sys.modules and RedisStore.fleet\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_missing_redis_package_says_how_to_install() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'redis' or name.startswith('redis.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        "    from robotgate.store import RedisStore\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'robotgate[redis]'" in done.stdout


# -- layout, round trips, expiry ----------------------------------------------


async def test_key_layout_and_values(stores: list[RedisStore], rawt: Any) -> None:
    store = stores[0]
    origin = "https://layout.example"
    # Host state and pacing are keyed by the gate's politeness group, opaque here.
    group = "host:layout.example"
    await store.save_robots(entry(origin, body=b"\x00raw body"))
    await store.save_host(HostState(group, visits=2, last_visit=5.5, next_allowed=7.25))
    await store.flush()
    # A long interval: the tat expires 1 s past itself, and a loaded machine may take that long.
    await store.reserve(group, 30.0)
    token = await store.lock_fetch(origin, 30)
    assert token is not None
    p = store.prefix
    assert FORMAT_VERSION == 3
    assert await rawt.get(f"{p}:meta") == b"robotgate/3"
    # Every key of one origin (or group) carries it as the cluster hash tag.
    robots = await rawt.hgetall(f"{p}:robots:{{{origin}}}")
    assert robots[b"b"] == b"\x00raw body"
    assert json.loads(robots[b"h"])[0] == "ok"
    assert await rawt.hgetall(f"{p}:host:{{{group}}}") == {
        b"v": b"2",
        b"lv": b"5.5",
        b"na": b"7.25",
        b"vc": b"0",
    }
    assert int(await rawt.get(f"{p}:tat:{{{group}}}") or 0) > 0
    assert await rawt.get(f"{p}:lock:{{{origin}}}") == token.encode()


@pytest.mark.slow
async def test_braces_in_keys_are_escaped(stores: list[RedisStore], rawt: Any) -> None:
    # The tag must be the whole origin: braces inside would end it early.
    store = stores[0]
    odd = "x}{y%7D"
    await store.save_robots(entry(odd))
    await store.save_host(HostState(odd, visits=1))
    await store.flush()
    assert await rawt.exists(f"{store.prefix}:robots:{{x%7D%7By%257D}}") == 1
    loaded = await stores[1].load_robots(odd)
    assert loaded is not None and loaded.origin == odd
    assert await stores[1].load_host(odd) == HostState(odd, visits=1)
    assert await stores[1].load_host("x}{y}") is None


@pytest.mark.slow
async def test_round_trips_per_operation(
    target: Target, stores: list[RedisStore], rawt: Any
) -> None:
    store = stores[0]
    origin = "https://count.example"

    async def count(operation: object) -> int:
        before = store.round_trips
        assert asyncio.iscoroutine(operation)
        await operation
        # On a cluster "saved"/"released" is published after the script returns.
        await store._publisher.settle()
        return store.round_trips - before

    # Warm up: scripts get cached on the server, the subscriber starts.
    await store.save_robots(entry(origin))
    await store.reserve(origin, 0.001)
    token = await store.lock_fetch(origin, 30)
    assert token is not None
    await store.unlock_fetch(origin, token)
    await store.pause(origin, time.time())
    await store.wait_robots(origin, 1)
    for i in range(120):  # the flush script, cached on every node
        await store.save_host(HostState(f"https://h{i}.example"))
    await store.flush()

    assert await count(store.load_robots(origin)) == 1
    # Nobody waits for it (the wait above found it stored, and no fetch under way): a
    # cluster publishes nothing either.
    assert await count(store.save_robots(entry(origin))) == 1
    assert await count(store.reserve(origin, 0.001)) == 1
    assert await count(store.lock_fetch(origin, 30)) == 1
    assert await count(store.unlock_fetch(origin, "whatever")) == 1
    assert await count(store.pause(origin, time.time())) == 1
    assert await count(store.wait_robots(origin, 1)) == 1
    # Host state is batched: saving costs nothing, a flush of many costs one.
    for i in range(120):
        assert await count(store.save_host(HostState(f"https://h{i}.example", visits=i))) == 0
    assert await count(store.load_host("https://h7.example")) == 0
    # One pipeline: one request per node that owns some of the hosts.
    assert await count(store.flush()) == (3 if target.cluster else 1)
    assert await count(store.load_host("https://h7.example")) == 1
    # The fast path of a page is at most reserve + load_robots.
    # A flushed script cache costs one extra round trip, once.
    await rawt.script_flush()
    assert await count(store.reserve(origin, 0.001)) == 2
    assert await count(store.reserve(origin, 0.001)) == 1


async def test_keys_expire(target: Target, prefix: str, rawt: Any) -> None:
    async with target.store(prefix, keep_stale=1000, host_ttl=500) as store:
        began = time.monotonic()
        now = time.time()
        fresh = entry("https://fresh.example").copy(fresh_until=now + 100)
        stale = entry("https://stale.example").copy(fetched_at=10.0, fresh_until=20.0)
        await store.save_robots(fresh)
        await store.save_robots(stale)
        await store.save_host(HostState("https://h.example", visits=1))
        await store.flush()
        await store.pause("https://p.example", now + 50)
        await store.reserve("https://t.example", 0.2)
        await store.lock_fetch("https://l.example", 3)

        def spent_ms() -> int:
            return math.ceil((time.monotonic() - began) * 1000) + 1

        async def ttl(key: str) -> int:
            return int(await rawt.pttl(f"{prefix}:{key}"))

        # Each key lives its time to live, less no more than the time since the writes began
        # (however long they took under load).
        for key, ttl_ms in (("robots:{https://fresh.example}", 1_100_000),
                            ("robots:{https://stale.example}", 1_000_000),
                            ("host:{https://h.example}", 500_000),
                            # A paused host is kept for the pause and then host_ttl.
                            ("host:{https://p.example}", 550_000)):
            got = await ttl(key)
            assert ttl_ms - spent_ms() <= got <= ttl_ms, (key, got, ttl_ms)
        assert 0 < await ttl("tat:{https://t.example}") <= 1_200
        # The pause's slot key lives out the pause, and up to a second more.
        assert 50_000 - spent_ms() < await ttl("tat:{https://p.example}") <= 51_000
        assert 0 < await ttl("lock:{https://l.example}") <= 3_000
        assert await ttl("meta") == -1


# -- fleet pacing ------------------------------------------------------------


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
def test_gcra_pacing_across_processes(target: Target, prefix: str) -> None:
    workers, count, interval = 4, 20, 0.05
    origins = [f"https://pace{i}.example" for i in range(3)]
    command = [sys.executable, "-c", PACER, target.url, target.kind, prefix, str(count),
               str(interval), *origins]
    procs = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
        )
        for _ in range(workers)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == b"ready\n"
        # All start together, so their reservations really interleave.
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=30) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    starts: dict[str, list[int]] = defaultdict(list)
    workers_seen: dict[str, set[int]] = defaultdict(set)
    for n, (out, err) in enumerate(outputs):
        assert procs[n].returncode == 0, err.decode()
        for origin, start_us, granted_us, began_us in json.loads(out):
            starts[origin].append(start_us)
            workers_seen[origin].add(n)
            assert start_us >= granted_us
            # The worker slept its wait: it began no earlier than granted
            # (2 ms slack for its timer against the server's wall clock).
            assert began_us >= start_us - 2_000
    interval_us = int(interval * 1_000_000)
    for origin in origins:
        ordered = sorted(starts[origin])
        assert len(ordered) == workers * count
        assert workers_seen[origin] == set(range(workers))
        gaps = [b - a for a, b in itertools.pairwise(ordered)]
        # Exact, on the server's clock: never two starts closer than the interval.
        assert min(gaps) >= interval_us
        # And no slot is wasted while workers queue for them.
        assert ordered[-1] - ordered[0] < (len(ordered) - 1) * interval_us * 1.5


async def test_reserve_spaces_slots_within_one_process(stores: list[RedisStore]) -> None:
    a, b = stores
    origin = "https://busy.example"
    slots = await asyncio.gather(
        *(handle.reserve_slot(origin, 0.1) for handle in (a, b) for _ in range(5))
    )
    answered_us = time.time_ns() // 1_000
    ordered = sorted(slot.start_us for slot in slots)
    # Never two starts closer than the interval, so ten slots span at least nine.
    assert all(y - x >= 100_000 for x, y in itertools.pairwise(ordered))
    assert ordered[-1] - ordered[0] >= 900_000
    # Each wait runs from the server's clock when the slot was granted, which was before its
    # answer came (2 ms slack between the two clocks): a caller that sleeps its wait from then
    # starts no earlier than its slot.  How long the ten grants took, under load, is no promise.
    for slot in slots:
        assert slot.granted_us <= answered_us + 2_000, slot
        assert slot.granted_us + round(slot.wait * 1_000_000) == slot.start_us, slot
    # Another origin is not held up.
    assert (await a.reserve_slot("https://idle.example", 0.1)).wait == 0


async def test_host_state_being_written_stays_visible(
    stores: list[RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # While a batch is on its way to Redis it is neither pending nor stored;
    # the process that saved it must still read it back (seen once in CI).
    store = stores[0]
    sent = asyncio.Event()
    release = asyncio.Event()
    script = store._link.scripts

    async def slow_script(*args: object) -> object:
        sent.set()
        await release.wait()
        return await script(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store._link, "scripts", slow_script)
    await store.save_host(HostState("https://w.example", visits=3))
    flushing = asyncio.create_task(store.flush())
    await sent.wait()
    got = await store.load_host("https://w.example")
    release.set()
    await flushing
    assert got is not None and got.visits == 3
    stored = await store.load_host("https://w.example")
    assert stored is not None and stored.visits == 3


async def test_pause_holds_fleet_wide(stores: list[RedisStore]) -> None:
    a, b = stores
    origin = "https://retry-after.example"
    first = await a.reserve_slot(origin, 0.05)
    assert first.wait == 0
    began = time.monotonic()
    until = time.time() + 0.5
    await a.pause(origin, until)
    paused = await b.reserve_slot(origin, 0.05)
    # The pause's rest, less no more than the time since it was asked for.
    assert 0.5 - (time.monotonic() - began) <= paused.wait <= 0.5, paused
    after = await a.reserve_slot(origin, 0.05)
    assert after.start_us - paused.start_us >= 50_000
    # A shorter pause does not shorten it; the host state records it.
    await b.pause(origin, until - 0.3)
    state = await b.load_host(origin)
    assert state is not None and state.next_allowed == until
    # A pause in the past changes nothing.
    await b.pause("https://other.example", time.time() - 5)
    assert (await b.reserve_slot("https://other.example", 0.05)).wait == 0


async def test_no_slot_is_granted_beyond_the_horizon(stores: list[RedisStore]) -> None:
    # A slot more than the horizon (6 s) ahead is not granted, and takes no place: were
    # Redis to lose its data, slots granted before would all be used within it.
    a, b = stores
    group = "host:far-ahead.example"
    starts = [(await a.reserve_slot(group, 2.0)).start_us for _ in range(4)]  # 0, 2, 4, 6 s
    assert [s - starts[0] for s in starts] == [0, 2_000_000, 4_000_000, 6_000_000]
    with pytest.raises(SlotAhead) as refused:
        await b.reserve(group, 2.0)  # at 8 s: beyond it
    assert 1.5 < refused.value.retry_in <= 2.0
    beyond = await b.reserve_slot(group, 2.0)
    assert not beyond.granted and beyond.start_us == starts[0] + 8_000_000


async def test_a_back_off_spaces_slots_by_itself_plus_the_slack(stores: list[RedisStore]) -> None:
    # A request may leave as late as its slack after its slot's start: slots spaced by the
    # back-off alone let it reach the server that much closer than the back-off to the
    # next (0.445 s where 0.5 s was due, in CI).  The slack is added, as to an interval.
    a, b = stores
    group = "host:slack.example"
    await a.save_host(HostState(group, visits=1, backoff=0.5, backoff_peak=0.5))
    await a.pause(group, time.time())
    await a.flush()
    first = await b.reserve_slot(group, 0.25, 0.2)
    second = await b.reserve_slot(group, 0.25, 0.2)
    assert second.start_us - first.start_us >= 700_000


@pytest.mark.slow
async def test_back_off_reaches_every_worker_and_is_kept(
    stores: list[RedisStore], rawt: Any
) -> None:
    # One worker's back-off (a 429) reaches the others at once: the pause carries
    # it, and every later slot keeps it.  A worker that never backed off leaves it.
    a, b = stores
    group = "host:limited.example"
    await a.save_host(HostState(group, visits=1, backoff=0.3, backoff_peak=0.6))
    await a.pause(group, time.time())  # before the batch is flushed
    raw = await rawt.hgetall(f"{a.prefix}:host:{{{group}}}")
    assert (raw[b"bx"], raw[b"bp"]) == (b"0.3", b"0.6")
    await a.flush()
    first = await b.reserve_slot(group, 0.01)
    second = await b.reserve_slot(group, 0.01)
    assert second.start_us - first.start_us >= 300_000
    await b.save_host(HostState(group, visits=5))
    await b.flush()
    state = await b.load_host(group)
    assert state is not None and (state.visits, state.backoff, state.backoff_peak) == (
        5, 0.3, 0.6)
    # The worker that backed off narrows it to nothing: slots keep the interval again.
    await a.save_host(HostState(group, visits=6, backoff=0.0, backoff_peak=0.6))
    await a.flush()
    third = await b.reserve_slot(group, 0.01)
    fourth = await b.reserve_slot(group, 0.01)
    assert 10_000 <= fourth.start_us - third.start_us < 300_000
    # A back-off that no worker renewed for 20 times its length has lapsed: the
    # worker that would narrow it is gone.
    await a.save_host(HostState(group, visits=7, backoff=0.3, backoff_peak=0.6))
    await a.flush()
    fifth = await b.reserve_slot(group, 0.01)
    sixth = await b.reserve_slot(group, 0.01)
    assert sixth.start_us - fifth.start_us >= 300_000
    renewed = int(await rawt.hget(f"{a.prefix}:host:{{{group}}}", "bt"))
    assert abs(renewed - sixth.start_us) < 5_000_000  # the server's clock
    # Lapsed, or not robotgate's (past MAX_TTL, renewed in an hour): the interval.
    host = f"{a.prefix}:host:{{{group}}}"
    for bx, bt in (("0.3", renewed - 6_000_001), ("1e9", renewed),
                   ("0.3", renewed + 3_600_000_000), ("nan", renewed), ("soon", renewed)):
        await rawt.hset(host, mapping={"bx": bx, "bt": str(bt)})
        seventh = await b.reserve_slot(group, 0.01)
        eighth = await b.reserve_slot(group, 0.01)
        assert 10_000 <= eighth.start_us - seventh.start_us < 300_000, (bx, bt)


@pytest.mark.slow
async def test_pause_ignores_worker_clock_skew(
    stores: list[RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = stores
    origin = "https://skew.example"
    # This worker's clock is an hour fast; the pause is still 0.5 s long.
    skewed = types.SimpleNamespace(time=lambda: time.time() + 3600, monotonic=time.monotonic)
    monkeypatch.setattr("robotgate.store.redis.store.time", skewed)
    began = time.monotonic()
    await a.pause(origin, skewed.time() + 0.5)
    monkeypatch.undo()
    slot = await b.reserve_slot(origin, 0.05)
    assert 0.5 - (time.monotonic() - began) <= slot.wait <= 0.5, slot


# -- fetch locks and waiting ---------------------------------------------------


@pytest.mark.slow
async def test_lock_taken_over_after_holder_killed(
    target: Target, prefix: str, stores: list[RedisStore]
) -> None:
    store = stores[0]
    origin = "https://dead-holder.example"
    ttl = 1.0
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        target.url,
        target.kind,
        prefix,
        origin,
        str(ttl),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=child_env(),
    )
    try:
        assert proc.stdout is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"locked\n"
        locked_at = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert await store.lock_fetch(origin, 30) is None
    # A waiter gives up as soon as the dead holder's lock expires ...
    assert await store.wait_robots(origin, 10) is None
    waited = time.monotonic() - locked_at
    assert ttl - 0.1 <= waited < ttl + 0.6
    # ... and then takes the lock itself.
    token = await store.lock_fetch(origin, 30)
    assert token is not None
    assert await stores[1].lock_fetch(origin, 30) is None


@pytest.mark.slow
async def test_wait_robots_woken_by_save_in_other_process(
    target: Target, prefix: str, stores: list[RedisStore]
) -> None:
    store = stores[0]
    origin = "https://far.example"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SAVER,
        target.url,
        target.kind,
        prefix,
        origin,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"ready\n"
        before = store.round_trips
        waiter = asyncio.ensure_future(store.wait_robots(origin, 10))
        # Waiting a while costs (almost) nothing: no polling loop.
        await asyncio.sleep(1.0)
        assert not waiter.done()
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
        released = time.monotonic()
        got = await asyncio.wait_for(waiter, 5)
        woke_after = time.monotonic() - released
        _, err = await asyncio.wait_for(proc.communicate(), 20)
        assert proc.returncode == 0, err.decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert got is not None and got.body == b"from afar"
    assert woke_after < 1.0
    # First check + subscribing (once per store: one request per cluster node) +
    # check + check on wake-up, and at most two safety-net polls.
    assert store.round_trips - before <= (8 if target.cluster else 6)


async def test_host_states_read_ahead_answer_load_host_without_a_round_trip(
    target: Target, stores: list[RedisStore], rawt: Any
) -> None:
    reader, writer = stores
    await writer.save_host(HostState("host:a", visits=3))
    await writer.flush()
    await rawt.set(f"{reader.prefix}:host:{{host:bad}}", "foreign")
    groups = ["host:a", "host:b", "host:bad", *(f"host:{i}" for i in range(30))]
    await reader.read_hosts_ahead(groups)  # one request per cluster node at most
    before = reader.round_trips
    assert await reader.load_host("host:a") == HostState("host:a", visits=3)
    assert await reader.load_host("host:b") is None
    assert reader.round_trips == before
    # A state saved here since (and written) is newer than the copy read ahead.
    await reader.save_host(HostState("host:0", visits=9))
    await reader.flush()
    assert await reader.load_host("host:0") == HostState("host:0", visits=9)
    # Foreign data is read by load_host itself, which names the key.
    with pytest.raises(StoreError, match="host:bad"):
        await reader.load_host("host:bad")
    # Each state read ahead answers once: asked again, it is read again.
    before = reader.round_trips
    assert await reader.load_host("host:a") == HostState("host:a", visits=3)
    assert reader.round_trips == before + 1


async def test_the_end_of_a_fetch_is_published_when_a_worker_waits_for_it(
    target: Target, stores: list[RedisStore]
) -> None:
    holder, waiter = stores
    origin = "https://flagged.example"
    for i in range(30):  # the script gets cached on the server (every cluster node)
        warm = f"https://warm{i}.example"
        token = await holder.lock_fetch(warm, 30)
        assert token is not None
        await holder.save_robots_unlock(entry(warm), token)
    await holder._publisher.settle()
    await waiter.flush()  # (connected)
    token = await holder.lock_fetch(origin, 30)
    assert token is not None

    async def fetch() -> int:
        await asyncio.sleep(0.3)  # the waiter looks meanwhile: it flags the origin
        before = holder.round_trips
        await holder.save_robots_unlock(entry(origin, body=b"here"), token)
        await holder._publisher.settle()
        return holder.round_trips - before

    got, trips = await asyncio.wait_for(asyncio.gather(waiter.wait_robots(origin, 10),
                                                       fetch()), 10)
    assert got is not None and got.body == b"here"
    # The save, and on a cluster the "saved" it publishes (the script publishes on one).
    assert trips == (2 if target.cluster else 1)


@pytest.mark.slow
async def test_release_without_result_ends_wait_early(stores: list[RedisStore]) -> None:
    holder, waiter = stores
    origin = "https://gave-up.example"
    token = await holder.lock_fetch(origin, 30)
    assert token is not None

    async def give_up() -> None:
        await asyncio.sleep(0.2)
        await holder.unlock_fetch(origin, token)

    started = time.monotonic()
    waited, _ = await asyncio.gather(waiter.wait_robots(origin, 10), give_up())
    assert waited is None
    assert time.monotonic() - started < 5.0  # woken by the release, not its 10 s timeout
    assert await waiter.lock_fetch(origin, 30) is not None


@pytest.mark.slow
async def test_many_waiters_share_one_subscriber(stores: list[RedisStore]) -> None:
    saver, store = stores
    origins = [f"https://w{i}.example" for i in range(50)]
    waiters = [asyncio.ensure_future(store.wait_robots(o, 10)) for o in origins for _ in range(2)]
    client = saver.client

    field = "ssub" if isinstance(client, RedisCluster) else "sub"

    async def subscribers() -> list[dict[str, Any]]:
        if isinstance(client, RedisCluster):
            return [
                c for node in client.get_primaries()
                for c in await client.client_list(target_nodes=node) if c.get(field) != "0"
            ]
        return [c for c in await client.client_list() if c.get(field) != "0"]

    # On a cluster, one shard subscriber connection per node, subscribed to the
    # node's share of the 64 "done" channels; on one server, one subscription.
    # Not one per waiter or origin.
    expected = (3, 64) if isinstance(client, RedisCluster) else (1, 1)
    deadline = time.monotonic() + 10
    while True:
        found = await subscribers()
        channels = sum(int(c[field]) for c in found)
        if (len(found), channels) == expected:
            break
        assert len(found) <= expected[0] and channels <= expected[1]
        assert time.monotonic() < deadline, f"subscribers: {found}"
        await asyncio.sleep(0.05)
    for origin in origins:
        await saver.save_robots(entry(origin, body=origin.encode()))
    # Each woken by its save: within 5 s, before their own 10 s timeouts (which answer None).
    results = await asyncio.wait_for(asyncio.gather(*waiters), 5)
    assert [r.body if r else None for r in results] == [o.encode() for o in origins for _ in "ab"]


# -- foreign and damaged data ---------------------------------------------------


@pytest.mark.slow
async def test_foreign_data_under_prefix(target: Target, prefix: str, rawt: Any) -> None:
    o = "https://foreign.example"
    raw = rawt
    await raw.set(f"{prefix}:robots:{{{o}}}", "a string")
    await raw.hset(f"{prefix}:robots:{{https://junk.example}}", mapping={"h": "{not json"})
    await raw.hset(f"{prefix}:robots:{{https://other.example}}", mapping={"name": "x"})
    await raw.rpush(f"{prefix}:host:{{{o}}}", "a list")
    await raw.hset(f"{prefix}:host:{{https://nan.example}}", mapping={"na": "soon"})
    await raw.set(f"{prefix}:tat:{{{o}}}", "whenever")
    await raw.hset(f"{prefix}:lock:{{{o}}}", mapping={"x": "1"})
    async with target.store(prefix, unavailable_timeout=2) as store:
        key = f"{prefix}:robots:{{{o}}}"
        with pytest.raises(StoreError, match="wrong type") as caught:
            await store.load_robots(o)
        assert repr(key) in str(caught.value) and repr(prefix) in str(caught.value)
        with pytest.raises(StoreError, match=f"{key!r} holds a string"):
            await store.save_robots(entry(o))
        with pytest.raises(StoreError, match="unreadable header"):
            await store.load_robots("https://junk.example")
        with pytest.raises(StoreError, match="not a robots entry"):
            await store.load_robots("https://other.example")
        with pytest.raises(StoreError, match="wrong type"):
            await store.load_host(o)
        with pytest.raises(StoreError, match="bad number"):
            await store.load_host("https://nan.example")
        with pytest.raises(StoreError, match=f"{prefix}:host:{{{o}}}.* holds a list"):
            await store.pause(o, time.time() + 1)
        # A batch with a foreign key: the other hosts are written, the bad one is named.
        await store.save_host(HostState(o, visits=1))
        await store.save_host(HostState("https://fine.example", visits=3))
        with pytest.raises(StoreError, match="holds a list"):
            await store.flush()
        fine = await store.load_host("https://fine.example")
        assert fine is not None and fine.visits == 3
        # Waiting for a foreign entry fails the same way.
        with pytest.raises(StoreError, match="holds a string"):
            await store.wait_robots(o, 1)
        with pytest.raises(StoreError, match="not a pacing time"):
            await store.reserve(o, 0.1)
        await raw.delete(f"{prefix}:tat:{{{o}}}")
        with pytest.raises(StoreError, match=f"{prefix}:host:{{{o}}}.* holds a list"):
            await store.reserve(o, 0.1)  # its stored back-off is read too
        with pytest.raises(StoreError, match="wrong type"):
            await store.lock_fetch(o, 1)
        # Clean origins still work.
        await store.save_robots(entry("https://clean.example"))
        assert await store.load_robots("https://clean.example") is not None


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("sidekiq/3", "another application"),
        ("robotgate/99", "format 99"),
        ("robotgate", "another application"),
        # The layout before hash tags and politeness groups: not converted in place.
        ("robotgate/1", "format 1 .*older robotgate.*Use a new prefix.*redis-cli --scan"),
        # Host state without the back-off, whose readers refuse a hash that has it.
        ("robotgate/2", "format 2 .*older robotgate.*back-off"),
    ],
)
@pytest.mark.slow
async def test_foreign_older_or_newer_meta(
    target: Target, prefix: str, rawt: Any, meta: str, message: str
) -> None:
    raw = rawt
    await raw.set(f"{prefix}:meta", meta)
    store = target.store(prefix)
    try:
        with pytest.raises(StoreError, match=message) as caught:
            await store.open()
        assert f"{prefix}:meta" in str(caught.value)
        # Every call checks first: none touches the data.
        with pytest.raises(StoreError, match=message):
            await store.save_robots(entry("https://x.example"))
        assert await raw.exists(f"{prefix}:robots:{{https://x.example}}") == 0
        # Nor did opening: the data's epoch is made only under this code's meta.
        assert await raw.exists(f"{prefix}:epoch") == 0
    finally:
        await store.close()
    assert await raw.get(f"{prefix}:meta") == meta.encode()


@pytest.mark.slow
async def test_meta_of_wrong_type(target: Target, prefix: str, rawt: Any) -> None:
    await rawt.hset(f"{prefix}:meta", mapping={"app": "robotgate"})
    store = target.store(prefix)
    try:
        with pytest.raises(StoreError, match=f"{prefix}:meta.*wrong type"):
            await store.open()
    finally:
        await store.close()


# -- outages -----------------------------------------------------------------


@pytest.mark.slow
async def test_outage_fails_closed_then_recovers(own_server: RedisServer) -> None:
    async with RedisStore(own_server.url, prefix="rg", unavailable_timeout=1.5) as store:
        other = RedisStore(own_server.url, prefix="rg", unavailable_timeout=1.5)
        try:
            origin = "https://outage.example"
            await store.save_robots(entry(origin))
            assert await store.wait_robots(origin, 1) is not None  # found at once
            assert await store.wait_robots("https://absent.example", 0.2) is None
            assert store.listening  # the wait started the subscriber
            own_server.stop()
            # Each call waits for Redis, then fails closed: never an answer by default.
            started = time.monotonic()
            failures = await asyncio.gather(
                store.load_robots(origin),
                store.reserve(origin, 0.1),
                store.lock_fetch(origin, 5),
                store.wait_robots("https://new.example", 5),
                return_exceptions=True,
            )
            # After the 1.5 s Redis is given, not the 5 s the wait asked for (load may
            # stretch the first, never shorten it).
            assert 1.4 <= time.monotonic() - started < 4.5
            for failure in failures:
                assert isinstance(failure, StoreError), failure
                assert "unreachable for" in str(failure) and own_server.url in str(failure)

            # Back (empty, as it keeps nothing on disk): the same store works again.
            own_server.resume()
            await store.save_robots(entry(origin, body=b"after"))
            loaded = await store.load_robots(origin)
            assert loaded is not None and loaded.body == b"after"
            # It lost its data: the server may have just been asked, the slot waits.
            assert (await store.reserve_slot(origin, 0.1)).wait == 0.1
            assert store.unrecorded_until > 0

            # The subscriber re-subscribes by itself: waiting is woken again.
            deadline = time.monotonic() + 3
            while not store.listening:
                assert time.monotonic() < deadline, "subscriber did not come back"
                await asyncio.sleep(0.05)

            async def save_soon() -> None:
                await asyncio.sleep(0.3)
                await other.save_robots(entry("https://later.example"))

            before = store.round_trips
            started = time.monotonic()
            waited, _ = await asyncio.gather(
                store.wait_robots("https://later.example", 5), save_soon()
            )
            assert waited is not None
            assert time.monotonic() - started < 2.5  # woken by the save, not its 5 s timeout
            assert store.round_trips - before <= 4
        finally:
            await other.close()


@pytest.mark.slow
async def test_short_outage_only_delays_calls(own_server: RedisServer) -> None:
    async with RedisStore(own_server.url, prefix="rg", unavailable_timeout=5) as store:
        await store.reserve("https://blip.example", 0.1)
        own_server.stop()
        call = asyncio.ensure_future(store.load_robots("https://blip.example"))
        await asyncio.sleep(0.5)
        assert not call.done()
        own_server.resume()
        assert await asyncio.wait_for(call, 5) is None


@pytest.mark.slow
async def test_close_with_pending_hosts_while_down_raises_and_releases(
    own_server: RedisServer,
) -> None:
    store = RedisStore(own_server.url, prefix="rg", unavailable_timeout=0.5, flush_interval=60)
    await store.save_host(HostState("https://pending.example", visits=1))
    own_server.stop()
    with pytest.raises(StoreError, match="unreachable"):
        await store.close()
    # The connections are closed all the same; a second close has nothing to do
    # but retry the batch, which is still pending.
    own_server.resume()
    await store.close()
    async with RedisStore(own_server.url, prefix="rg") as check:
        assert await check.load_host("https://pending.example") == HostState(
            "https://pending.example", visits=1
        )


@pytest.mark.slow
async def test_given_client_is_not_closed(target: Target, prefix: str) -> None:
    client: Any = (RedisCluster if target.cluster else aioredis.Redis).from_url(target.url)
    try:
        async with RedisStore(prefix=prefix, client=client) as store:
            assert store.cluster == target.cluster
            await store.save_robots(entry("https://given.example"))
            assert await store.wait_robots("https://given.example", 1) is not None
            origin = "https://given-later.example"

            async def save_soon() -> None:
                await asyncio.sleep(0.2)
                await store.save_robots(entry(origin))

            waited, _ = await asyncio.gather(store.wait_robots(origin, 5), save_soon())
            assert waited is not None
        assert await client.ping()
        await store.close()
    finally:
        await client.aclose()


def test_rejects_bad_settings() -> None:
    with pytest.raises(ValueError):
        RedisStore(prefix="")
    with pytest.raises(ValueError, match="must not contain"):
        RedisStore(prefix="crawl{1}")
    with pytest.raises(ValueError):
        RedisStore(unavailable_timeout=0)
    with pytest.raises(ValueError):
        RedisStore(flush_batch=0)
    with pytest.raises(ValueError, match="unix"):
        RedisStore("unix:///tmp/redis.sock", cluster=True)
    with pytest.raises(ValueError, match="RedisCluster"):
        RedisStore(client=aioredis.Redis(), cluster=True)
    with pytest.raises(ValueError, match="decode_responses"):
        RedisStore(client=RedisCluster(host="127.0.0.1", port=1, decode_responses=True))
    assert "secret" not in repr(RedisStore("redis://user:secret@host:1/0"))
    assert "cluster=True" in repr(RedisStore("redis://host:1", cluster=True))
    assert RedisStore("redis+cluster://host:7000").cluster
    assert RedisStore("rediss+cluster://host:7000").url == "rediss://host:7000"
    assert not RedisStore("redis://host:7000").cluster


async def test_cluster_named_by_the_url_scheme(redis_cluster: str, prefix: str) -> None:
    # For places that take only a URL: robotgate fetch --store, Scrapy's settings.
    url = redis_cluster.replace("redis://", "redis+cluster://")
    async with RedisStore(url, prefix=prefix) as store:
        assert store.cluster and isinstance(store.client, RedisCluster)
        await store.save_robots(entry("https://scheme.example"))
        assert await store.load_robots("https://scheme.example") is not None


async def test_a_robots_txt_fetch_costs_two_round_trips_per_origin(
    target: Target, stores: list[RedisStore]
) -> None:
    from robotgate.policy.fetch import FetchPolicy
    from robotgate.policy.fetch_flow import RobotsResponse
    from robotgate.policy.site import Interpretation
    from robotgate.politeness.robots_cache import RobotsCache
    from robotgate.politeness.robots_fetcher import RobotsFetcher
    from tests.support.transports import FakeTransport

    store = stores[0]
    transport = FakeTransport(RobotsResponse(200, {}, b"User-agent: *\nDisallow: /x\n"))
    cache = RobotsCache(RobotsFetcher(transport, FetchPolicy()), store, Interpretation("Bot"),
                        fleet=store.fleet(), host_state=HostState)
    for i in range(30):  # the scripts get cached on the server (every cluster node)
        await cache.get(f"https://warm{i}.example")
        token, _ = await store.lock_load(f"https://warm{i}.example", 1)
        assert token is not None
        await store.unlock_fetch(f"https://warm{i}.example", token)
    await store._publisher.settle()
    before = store.round_trips
    site = await cache.get("https://count.example")
    await store._publisher.settle()
    # A first look that takes the fetch lock (nothing stored), the save that releases
    # it (nobody waited: a cluster publishes nothing either).
    assert store.round_trips - before == 2
    assert not site.allowed("/x", "Bot")
    assert await store.lock_fetch("https://count.example", 5) is not None  # released
    assert (await store.load_robots("https://count.example")) is not None
    # A stale entry stored: the look, the lock with a second look, the save.
    stale = entry("https://stale.example")
    await store.save_robots(replace(stale, fetched_at=stale.fetched_at - 10,
                                    fresh_until=stale.fetched_at - 5))
    await store._publisher.settle()
    before = store.round_trips
    await cache.get("https://stale.example")
    await store._publisher.settle()
    assert store.round_trips - before == 3
    assert len(transport.requests) == 32


async def test_robots_txt_of_origins_asked_at_once_shares_requests(
    target: Target, stores: list[RedisStore]
) -> None:
    # A crawl's visits ask several new origins at once: their looks (each taking its
    # fetch lock) go in one request, and their saves, ending together, in another.
    # One request each cost two round trips an origin.
    from robotgate.policy.fetch import FetchPolicy
    from robotgate.policy.fetch_flow import RobotsResponse
    from robotgate.policy.site import Interpretation
    from robotgate.politeness.robots_cache import RobotsCache
    from robotgate.politeness.robots_fetcher import RobotsFetcher
    from tests.support.transports import FakeTransport

    store, other = stores
    transport = FakeTransport(RobotsResponse(200, {}, b"User-agent: *\nDisallow: /x\n"))
    cache = RobotsCache(RobotsFetcher(transport, FetchPolicy()), store, Interpretation("Bot"),
                        fleet=store.fleet(), host_state=HostState)
    for i in range(30):  # the scripts get cached on the server (every cluster node)
        await cache.get(f"https://warm{i}.example")
    await store._publisher.settle()
    origins = [f"https://together{i}.example" for i in range(6)]
    before = store.round_trips
    sites = await asyncio.gather(*(cache.get(origin) for origin in origins))
    await store._publisher.settle()
    # One request per node that owns some of the origins, for the looks and the saves.
    assert store.round_trips - before <= (6 if target.cluster else 2)
    assert all(not site.allowed("/x", "Bot") for site in sites)
    assert len(transport.requests) == 36  # each fetched once
    for origin in origins:  # each saved, each lock released
        assert await other.load_robots(origin) is not None
        assert await other.lock_fetch(origin, 5) is not None


async def test_a_call_sent_with_others_fails_alone_and_a_cancelled_one_is_not_sent(
    target: Target, stores: list[RedisStore], rawt: Any, prefix: str
) -> None:
    store, other = stores
    await rawt.set(f"{prefix}:robots:{{https://foreign.example}}", "not a hash")
    good = store.load_or_lock("https://good.example", 30)
    bad = store.load_or_lock("https://foreign.example", 30)
    dropped = asyncio.ensure_future(store.load_or_lock("https://dropped.example", 30))
    await asyncio.sleep(0)  # its call waits for the others
    dropped.cancel()
    answers = await asyncio.gather(good, bad, return_exceptions=True)
    assert not isinstance(answers[0], BaseException)
    found, token = answers[0]
    assert found is None and token is not None
    assert isinstance(answers[1], StoreError)
    assert "https://foreign.example" in str(answers[1])
    with pytest.raises(asyncio.CancelledError):
        await dropped
    # The cancelled look never took its lock: another worker takes it.
    assert await other.lock_fetch("https://dropped.example", 5) is not None
    assert await other.lock_fetch("https://good.example", 5) is None


async def test_a_server_that_is_not_redis_is_a_store_error_naming_it_at_once() -> None:
    """What answers at the store's URL speaks another protocol (a web server took the
    port): a StoreError saying so, not redis-py's own error, and no wait for Redis."""

    async def web_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(web_server, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        store = RedisStore(f"redis://127.0.0.1:{port}/0", prefix="notredis",
                           unavailable_timeout=30)
        started = time.monotonic()
        with pytest.raises(StoreError, match="is not Redis"):
            await store.open()
        assert time.monotonic() - started < 30
        await store.close()
    finally:
        server.close()
        await server.wait_closed()
