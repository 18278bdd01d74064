"""Fleet mode: worker processes sharing one politeness budget through Redis.

Every test runs real worker processes (``testbed/fleet.py``) or
gates against a real ``redis-server`` on loopback, or a real 3-master Redis
Cluster, and the loopback server of ``testbed/server.py``, and checks
the promises at the server: one robots.txt request per origin across the
fleet, no disallowed page, no two page requests to one host closer than the
delay, a definite answer for every task, and a clear :class:`StoreError`
instead of an impolite request when Redis (or one of the cluster's masters)
is gone or holds foreign data.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from robotgate import Disallowed, FetchPolicy, RobotGate, StoreError
from robotgate.store.redis import RedisStore
from testbed.fleet import Fleet, FleetChecks, split_urls
from testbed.redis_server import (
    MISSING_REASON,
    LocalCluster,
    RedisServer,
    find_redis_server,
)
from testbed.server import (
    SO_TIMESTAMPNS,
    BenchServer,
    HostPlan,
    HostStats,
    is_disallowed,
    kernel_time,
    page_paths,
    stamp_probe,
    stamps_on_arrival,
)

pytestmark = pytest.mark.slow
# The soaks' own limit (pytest-timeout's 300 s is sized for a quiet machine): a fleet
# at load 30 crawls several times slower, and each fleet run is bounded by
# Fleet.results (STALL without a request at the server, and PROGRESS_STRETCH times it).
SOAK_LIMIT = 900

AGENT = "FleetTestBot/1.0 (+https://example.com/bot)"
DELAY = 0.2
# The server records when the kernel received each request (SO_TIMESTAMPNS), so
# its records do not depend on how busy its own loop is, and the workers run at
# the same CPU priority as everything else.  A worker looks at its fleet slot last
# in user space, just before its headers are written: a process that loses the CPU
# between that look and the write (a machine with more runnable processes than
# cores) sends late by as long.  The margin is the allowance for that.
WORKER_OPTIONS = ("--pacing-margin", "0.1")
# How long the patient worker of the cluster outage test waits for its store: well past
# the outage (4.2 to 5.2 s beside 6 CPU-bound processes), however long its calls queue.
PATIENCE = 60.0


class PersistentRedis(RedisServer):
    """A redis-server that keeps its data on disk (append-only file, fsync on every
    write), as a production Redis would: stopped and started again, it comes back
    with everything, so a test can tell "unreachable for a while" from "lost"."""

    def _options(self) -> list[str]:
        return [*super()._options(), "--appendonly", "yes", "--appendfsync", "always"]


@pytest.fixture(autouse=True)
def no_collector_pauses() -> Iterator[None]:
    # The server records arrivals in this process, which holds a whole test session's
    # objects by now: one full collection of them (100 ms or more on a busy machine)
    # would delay one record and shorten a gap the workers kept.  Frozen, they are
    # not visited again.
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture
def persistent_redis(tmp_path: Path) -> Iterator[RedisServer]:
    if find_redis_server() is None:
        print(f"\nskipping: {MISSING_REASON}", file=sys.stderr)
        pytest.skip(MISSING_REASON)
    directory = tmp_path / "redis"
    directory.mkdir()
    with PersistentRedis.start(directory) as server:
        yield server


@pytest.fixture(params=["server", "cluster"])
def redis_target(request: pytest.FixtureRequest) -> tuple[str, bool]:
    """(URL, is a cluster): the session's redis-server, or its 3-master Redis Cluster."""
    cluster = request.param == "cluster"
    return request.getfixturevalue("redis_cluster" if cluster else "redis_url"), cluster


def host_urls(srv: BenchServer, pages: int) -> list[list[str]]:
    paths = page_paths(pages)
    return [[srv.url(i, path) for path in paths] for i in range(len(srv.hosts))]


def expected(srv: BenchServer, url: str) -> str:
    """What a polite worker must answer for ``url``: fetched or disallowed."""
    host, _, rest = url.partition("//")[2].partition("/")
    index = srv.hosts.index(host.split(":")[0])
    return "disallowed" if is_disallowed(srv.scenarios[index], "/" + rest) else "fetched"


def checks(srv: BenchServer, delay: float = DELAY) -> FleetChecks:
    stats: dict[str, Any] = srv.stats_json(log=False)
    return FleetChecks.of(stats, dict.fromkeys(srv.hosts, delay))


def requests_seen(srv: BenchServer) -> int:
    """Every request the server received so far (a fleet's progress)."""
    return sum(s.page_requests + s.robots_requests for s in srv.stats().values())


# How long a fleet may go without the server seeing a request (its run may last
# Fleet.results' PROGRESS_STRETCH times this): a machine at load 30 crawls slowly.
STALL = 90.0


def twice(stats: dict[str, HostStats], fleet: Fleet) -> str:
    """The hosts whose robots.txt was not asked for once, with when (the server's
    monotonic clock) each request came, and where the workers' logs are."""
    times = {host: s.robots_times for host, s in stats.items() if s.robots_requests != 1}
    return f"robots.txt requests {times}; worker logs in {fleet.directory}"


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


# -- the fleet under load -------------------------------------------------------


@pytest.mark.soak
@pytest.mark.timeout(SOAK_LIMIT)
async def test_four_workers_share_one_budget(
    redis_target: tuple[str, bool], prefix: str, tmp_path: Path
) -> None:
    """4 worker processes x 2,000 tasks over 200 origins, every worker on every origin."""
    url, cluster = redis_target
    template = HostPlan(pages=12)
    async with BenchServer.mixed(200, {"partial": 1, "allow": 1}, template=template) as srv:
        per_host = host_urls(srv, 12)  # 3 pages per origin per worker
        lists = split_urls(per_host, 4)
        async with Fleet(url, prefix, lists, tmp_path, tasks=2000, delay=DELAY,
                         cluster=cluster, options=WORKER_OPTIONS) as fleet:
            fleet.go()
            summaries = await fleet.results(STALL, progress=lambda: requests_seen(srv))
            outcomes = fleet.outcomes()
        found = checks(srv)
        stats = srv.stats()

    urls = [url for urls in lists for url in urls]
    assert len(urls) == 2400 and len(outcomes) == len(urls)
    # Every task got a definite, correct answer.
    wrong = {url: o for url, o in outcomes.items() if o != expected(srv, url)}
    assert not wrong, list(wrong.items())[:5]
    # One robots.txt request per origin across the fleet, and no disallowed page.
    assert [s.robots_requests for s in stats.values()] == [1] * 200, twice(stats, fleet)
    assert sum(s["robots_requests"] for s in summaries) == 200
    assert found.disallowed_at_server == 0
    # Each fetched page reached the server once, and no two requests to a host
    # came closer than the delay, whichever workers sent them.
    fetched = sum(1 for o in outcomes.values() if o == "fetched")
    assert found.page_requests == fetched == sum(s["fetched"] for s in summaries)
    assert found.violations == 0, f"smallest gap {found.min_gap:.4f} s"
    assert found.min_gap is not None and found.min_gap >= DELAY
    # robots.txt requests count in each host's budget too.
    assert found.request_violations == 0, f"smallest gap {found.request_min_gap:.4f} s"
    # Every worker took part in the crawl of every origin.
    for worker_urls, summary in zip(lists, summaries, strict=True):
        assert summary["answered"] == len(worker_urls)
        assert summary["fetched"] > 0


@pytest.mark.soak
@pytest.mark.timeout(SOAK_LIMIT)
async def test_three_workers_thirty_origins_on_a_cluster(
    redis_cluster: str, prefix: str, tmp_path: Path
) -> None:
    """3 worker processes over 30 origins on a 3-master Redis Cluster.

    Exactly one robots.txt request per origin fleet-wide, no disallowed page, no
    two requests to one host closer than the delay, and the prefix's keys spread
    over all three masters (each origin's and each host's keys in one slot).
    """
    template = HostPlan(pages=12)
    async with BenchServer.mixed(30, {"partial": 1, "allow": 1}, template=template) as srv:
        lists = split_urls(host_urls(srv, 12), 3)
        async with Fleet(redis_cluster, prefix, lists, tmp_path, tasks=500, delay=DELAY,
                         cluster=True, options=WORKER_OPTIONS) as fleet:
            fleet.go()
            summaries = await fleet.results(STALL, progress=lambda: requests_seen(srv))
            outcomes = fleet.outcomes()
        found = checks(srv)
        stats = srv.stats()

    wrong = {url: o for url, o in outcomes.items() if o != expected(srv, url)}
    assert not wrong, list(wrong.items())[:5]
    assert [s.robots_requests for s in stats.values()] == [1] * 30, twice(stats, fleet)
    assert sum(s["robots_requests"] for s in summaries) == 30
    assert found.disallowed_at_server == 0
    assert found.page_requests == sum(s["fetched"] for s in summaries) > 0
    assert found.violations == 0, f"smallest gap {found.min_gap:.4f} s"
    assert found.request_violations == 0, f"smallest gap {found.request_min_gap:.4f} s"
    assert all(s["fetched"] > 0 for s in summaries)

    cluster = RedisCluster.from_url(redis_cluster)
    try:
        await cluster.initialize()
        per_master: dict[str, list[str]] = {}
        for node in cluster.get_primaries():
            direct = aioredis.Redis(host=node.host, port=node.port)
            try:
                per_master[node.name] = [
                    key.decode() async for key in direct.scan_iter(match=f"{prefix}:*")
                ]
            finally:
                await direct.aclose()
    finally:
        await cluster.aclose()
    assert len(per_master) == 3
    assert all(keys for keys in per_master.values()), {n: len(k) for n, k in per_master.items()}
    keys = [key for found_keys in per_master.values() for key in found_keys]
    origins = {srv.base_url(i) for i in range(30)}
    groups = {f"host:{host}" for host in srv.hosts}
    # The meta key, and per origin its robots.txt entry; per host its state and
    # (while a slot is pending) its pacing time: nothing else, all hash-tagged.
    for key in keys:
        kind, _, tag = key[len(prefix) + 1 :].partition(":")
        assert key == f"{prefix}:meta" or (
            (kind == "robots" and tag[1:-1] in origins)
            or (kind in ("host", "tat") and tag[1:-1] in groups)
        ), key
    assert sum(key.startswith(f"{prefix}:robots:") for key in keys) == 30
    assert sum(key.startswith(f"{prefix}:host:") for key in keys) == 30


# -- the server's clock -------------------------------------------------------------


async def test_the_server_records_when_the_kernel_received_a_request() -> None:
    """The fleet tests judge spacing by the test server's records: those are the
    kernel's receive times, not when a busy server loop read the bytes."""
    async with BenchServer([HostPlan("allow")]) as srv:
        host, port = srv.hosts[0], srv.port
        sent: list[float] = []

        def client() -> bytes:
            with socket.create_connection((host, port)) as conn:
                sent.append(time.monotonic())
                conn.sendall(f"GET /page/1 HTTP/1.1\r\nHost: {host}\r\n"
                             "Connection: close\r\n\r\n".encode())
                return conn.recv(1024)

        answer = asyncio.get_running_loop().run_in_executor(None, client)  # started at once
        deadline = time.monotonic() + 10
        while not sent and time.monotonic() < deadline:
            time.sleep(0.001)  # the thread's clock: nothing of this loop runs meanwhile
        time.sleep(0.3)  # the server's loop is busy while the request waits in its socket
        assert (await asyncio.wait_for(answer, 10)).startswith(b"HTTP/1.1 200")
        [arrived] = srv.host_stats(0).page_times
    assert 0 <= arrived - sent[0] < 0.1, arrived - sent[0]


def _stamped_on_arrival() -> bool:
    """Whether a datagram sent now is stamped when it arrives (not when it is read)."""
    with stamp_probe() as probe:
        probe.sendto(b"?", probe.getsockname())
        time.sleep(0.05)
        _, ancillary, _, _ = probe.recvmsg(1, socket.CMSG_SPACE(16))
        stamp = kernel_time(ancillary)
        return stamp is not None and time.monotonic() - stamp >= 0.04


async def test_the_server_is_ready_once_the_kernel_stamps_on_arrival() -> None:
    """Linux turns its receive stamps on a moment after a first socket asks (from a
    work queue): a request that came before then was stamped as it was read (0.3 s
    late once in CI).  The server waits for them, holding its listeners' ask."""
    for _ in range(3):
        time.sleep(0.2)  # no socket of this test asks for stamps: the kernel may turn them off
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as asks:  # a listener's part
            asks.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            await stamps_on_arrival()
            assert _stamped_on_arrival()


# -- a loop late between its slot and its send ------------------------------------


@pytest.mark.parametrize("whose", ["the gate's session", "yours"])
@pytest.mark.parametrize("late_at", ["robots.txt", "page"])
async def test_a_loop_late_twice_before_the_headers_go_never_sends_past_its_slot(
    redis_url: str, prefix: str, monkeypatch: pytest.MonkeyPatch, late_at: str, whose: str
) -> None:
    """The worker's loop is blocked between the slot's reservation and the request's
    first bytes, twice in a row (at robots.txt's request, or a page's): each time the
    slot is given up and the next one reserved, and the request goes out only within
    the slot it holds."""
    loop = asyncio.get_running_loop()
    store = RedisStore(redis_url, prefix=prefix)
    # Each slot Redis granted, on this loop's clock: (asked, wait, slack).
    grants: list[tuple[float, float, float]] = []
    reserve = store.reserve

    async def recording(key: str, interval: float, slack: float = 0.0) -> float | None:
        asked = loop.time()
        wait = await reserve(key, interval, slack)
        grants.append((asked, wait or 0.0, slack))
        return wait

    store.reserve = recording  # type: ignore[method-assign]
    lags: list[float] = []  # how long the loop is blocked at each of the next sends
    sent: list[tuple[float, int]] = []  # when each request went out, and the slots by then
    send = aiohttp.ClientRequest.send

    async def late(request: aiohttp.ClientRequest, conn: Any) -> aiohttp.ClientResponse:
        if lags:
            time.sleep(lags.pop(0))  # the whole loop stands still: nothing else moves
        resp = await send(request, conn)  # the slot's last look is in here
        sent.append((loop.time(), len(grants)))
        return resp

    monkeypatch.setattr(aiohttp.ClientRequest, "send", late)
    async with BenchServer([HostPlan("allow")]) as srv, aiohttp.ClientSession() as yours:
        session = yours if whose == "yours" else None
        async with RobotGate(AGENT, delay=DELAY, store=store, session=session) as gate:
            fleet = gate._servers.fleet
            assert fleet is not None

            def past_the_slack() -> list[float]:
                # Late past the slot's slack (learnt: a loaded loop is late, and the slack
                # grows with it), then later than the slack learnt from that.
                slack = fleet.slack + fleet.trip
                return [slack + 0.1, slack + 0.5]

            if late_at == "robots.txt":
                lags[:] = past_the_slack()
            async with gate.fetch(srv.url(0, "/page/1")) as resp:  # robots.txt's slot, then its own
                assert resp.status == 200
            if late_at == "page":
                lags[:] = past_the_slack()
            async with gate.fetch(srv.url(0, "/page/2")) as resp:
                assert resp.status == 200
            late_slots = fleet.late
        host = srv.host_stats(0)
    assert not lags and host.page_requests == 2
    # When each request reached the server (the kernel's stamp, on the loop's clock): a
    # time read after send() returned would count the loop's lag after the write too.
    arrivals = sorted([*host.robots_times, *host.page_times])
    assert len(arrivals) == len(sent) == 3
    for at, (_, granted) in zip(arrivals, sent, strict=True):
        asked, wait, slack = grants[granted - 1]
        assert at <= asked + wait + slack, (at - (asked + wait + slack), grants, sent, arrivals)
    # Both slots the blocked loop missed were given up, each for a new one (a loaded
    # machine may make the loop late for more): three slots, and one more per miss.
    assert late_slots >= 2 and len(grants) == 3 + late_slots, (late_slots, grants)


# -- a dead lock holder ---------------------------------------------------------


@pytest.mark.soak
@pytest.mark.timeout(SOAK_LIMIT)
async def test_lock_holder_killed_mid_fetch(
    redis_target: tuple[str, bool], prefix: str, tmp_path: Path
) -> None:
    """The worker fetching robots.txt dies: another takes over once its lock expires."""
    redis_url, cluster = redis_target
    holder_timeout = 1.0
    ttl = holder_timeout * 2 + 5  # the gate's fetch lock lives this long
    async with BenchServer([HostPlan("slow", slow_seconds=5.0)]) as srv:
        page = srv.url(0, "/page/1")
        options = ["--robots-timeout", str(holder_timeout)]
        async with Fleet(redis_url, prefix, [[page]], tmp_path, tasks=1, cluster=cluster,
                         options=options) as fleet:
            fleet.go()
            # Killed while its robots.txt request is out (and unanswered).
            await wait_until(lambda: srv.host_stats(0).robots_requests == 1, 20,
                             "the holder's robots.txt request")
            fleet.procs[0].send_signal(signal.SIGKILL)
            await fleet.procs[0].wait()
        assert fleet.procs[0].returncode == -signal.SIGKILL
        srv.set_plan(0, HostPlan("slow", slow_seconds=0.1))  # answers quickly from now on

        store = RedisStore(redis_url, prefix=prefix, cluster=cluster)
        async with RobotGate(AGENT, delay=0, store=store,
                             policy=FetchPolicy(timeout=5.0)) as gate:
            async with gate.fetch(page) as resp:
                status = resp.status
            with pytest.raises(Disallowed):
                await gate.fetch(srv.url(0, "/private/4"))
            taken_over = gate.stats["robots_requests"]
        robots = srv.host_stats(0)

    assert status == 200
    # Exactly one more robots.txt request, sent once the dead holder's lock expired.
    assert taken_over == 1 and robots.robots_requests == 2
    first, second = robots.robots_times
    assert second - first >= ttl - 1.5
    # The result is shared: a new worker finds it in Redis.
    async with RedisStore(redis_url, prefix=prefix, cluster=cluster) as check:
        entry = await check.load_robots(srv.base_url(0))
    assert entry is not None and entry.status == 200


@pytest.mark.soak
@pytest.mark.timeout(SOAK_LIMIT)
async def test_lock_holder_stopped_mid_fetch_and_resumed(
    redis_target: tuple[str, bool], prefix: str, tmp_path: Path
) -> None:
    """The worker fetching robots.txt is stopped (SIGSTOP) past its lock's life: another
    takes the expired lock and fetches robots.txt once.  Resumed, the first worker finds
    its lock gone and the other's entry stored: it sends no robots.txt request again and
    stores nothing over that entry, and uses it."""
    redis_url, cluster = redis_target
    async with BenchServer([HostPlan("slow", slow_seconds=5.0)]) as srv:
        page = srv.url(0, "/page/1")
        origin = srv.base_url(0)
        async with Fleet(redis_url, prefix, [[page]], tmp_path, tasks=1,
                         cluster=cluster) as fleet:
            fleet.go()
            # Stopped while its robots.txt request is out (answered while it is stopped).
            await wait_until(lambda: srv.host_stats(0).robots_requests == 1, 20,
                             "the holder's robots.txt request")
            fleet.procs[0].send_signal(signal.SIGSTOP)
            try:
                srv.set_plan(0, HostPlan("slow", slow_seconds=0.1))
                store = RedisStore(redis_url, prefix=prefix, cluster=cluster)
                async with RobotGate(AGENT, delay=0, store=store,
                                     policy=FetchPolicy(timeout=5.0)) as gate:
                    async with gate.fetch(page) as resp:  # once the stopped one's lock expired
                        status = resp.status
                    taken_over = gate.stats["robots_requests"]
                async with RedisStore(redis_url, prefix=prefix, cluster=cluster) as check:
                    theirs = await check.load_robots(origin)
            finally:
                fleet.procs[0].send_signal(signal.SIGCONT)
            [summary] = await fleet.results(STALL)
            outcomes = fleet.outcomes()
        robots = srv.host_stats(0)
        async with RedisStore(redis_url, prefix=prefix, cluster=cluster) as check:
            stored = await check.load_robots(origin)

    assert status == 200 and taken_over == 1
    assert theirs is not None and theirs.status == 200
    # Two robots.txt requests in all: the stopped holder's, and the one that took over.
    assert robots.robots_requests == 2, robots.robots_times
    assert summary["robots_requests"] == 1
    # The resumed worker stored nothing over the entry of the worker that took over,
    # and crawled by it.
    assert stored is not None and stored.fetched_at == theirs.fetched_at
    assert outcomes == {page: "fetched"}, fleet.log_path(0).read_text()


# -- Redis goes away mid-crawl --------------------------------------------------


def assert_outage_survived(srv: BenchServer, quitting: dict[str, Any],
                           outcomes: dict[str, str], found: FleetChecks, stats: dict[str, Any],
                           resumed: float) -> dict[str, str]:
    """What an outage of the store must leave true; returns the URLs that failed closed."""
    # The impatient worker failed closed while the store was away, with a clear error ...
    failed = {u: o for u, o in outcomes.items() if o.startswith("store_error")}
    assert quitting["store_errors"] == len(failed) > 0
    assert all("unreachable" in o for o in failed.values()), list(failed.values())[:3]
    assert quitting["errors"] == 0
    # ... and every other answer of both workers is right.
    wrong = {u: o for u, o in outcomes.items() if u not in failed and o != expected(srv, u)}
    assert not wrong, list(wrong.items())[:5]
    # The crawl went on by itself after the restart.
    assert max(t for s in stats.values() for t in s.page_times) > resumed
    # No page went out without a slot, and no promise was broken: one robots.txt
    # request per origin (the entries survived), no disallowed page, no two requests
    # to a host closer than the delay.
    fetched = sum(1 for o in outcomes.values() if o == "fetched")
    assert found.page_requests == fetched
    assert [s.robots_requests for s in stats.values()] == [1] * 40
    assert found.disallowed_at_server == 0
    assert found.violations == 0, f"smallest gap {found.min_gap:.4f} s"
    return failed


@pytest.mark.soak
@pytest.mark.timeout(SOAK_LIMIT)
async def test_redis_stopped_and_restarted_mid_crawl(
    persistent_redis: RedisServer, tmp_path: Path
) -> None:
    """Redis is stopped mid-crawl for 2 s, then started again (with its data).

    Worker 0 waits up to 10 s for Redis and so only slows down; worker 1 gives
    up after 0.5 s, so its requests during the outage fail closed with a clear
    StoreError.  Both carry on by themselves once Redis is back.
    """
    redis = persistent_redis
    template = HostPlan(pages=12)
    async with BenchServer.mixed(40, {"partial": 1, "allow": 1}, template=template) as srv:
        lists = split_urls(host_urls(srv, 12), 2)
        total_pages = sum(expected(srv, u) == "fetched" for urls in lists for u in urls)
        # Worker 1 differs only in how long it waits for Redis.
        patience = [[], ["--unavailable-timeout", "0.5"]]
        async with Fleet(redis.url, "outage", lists, tmp_path, tasks=2000, delay=DELAY,
                         options=WORKER_OPTIONS, worker_options=patience) as fleet:
            fleet.go()
            await wait_until(lambda: checks(srv).page_requests >= total_pages // 4, 60,
                             "a quarter of the crawl")
            # In a thread: the loopback server shares this event loop, and a blocked
            # loop would hold requests back and then stamp them all at once.
            await asyncio.to_thread(redis.stop)
            await asyncio.sleep(2.0)
            await asyncio.to_thread(redis.resume)
            resumed = time.monotonic()
            summaries = await fleet.results(STALL, progress=lambda: requests_seen(srv))
            outcomes = fleet.outcomes()
        found = checks(srv)
        stats = srv.stats()

    waiting, quitting = summaries
    # The patient worker lost nothing: every URL has its right answer.
    assert waiting["store_errors"] == waiting["errors"] == 0
    assert waiting["answered"] == waiting["urls"]
    failed = assert_outage_survived(srv, quitting, outcomes, found, stats, resumed)
    assert all(redis.url in o for o in failed.values())
    async with RedisStore(redis.url, prefix="outage") as check:
        entries = [await check.load_robots(srv.base_url(i)) for i in range(40)]
    assert all(entry is not None for entry in entries)


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.timeout(SOAK_LIMIT)
async def test_cluster_master_killed_and_restarted_mid_crawl(tmp_path: Path) -> None:
    """One master of a 3-master cluster is killed (SIGKILL) mid-crawl, started again 2 s later.

    The cluster keeps every write on disk (append-only, fsync always), as a
    production one should.  While the master is down its slots cannot be
    reached, and soon the whole cluster refuses commands (full coverage lost):
    worker 0 waits up to 60 s for it, worker 1 gives up after 0.5 s and fails
    closed with StoreError.  Nothing is sent without a slot: no disallowed page,
    no two requests to a host closer than the delay, one robots.txt per origin.
    (The outage lasts from the kill until every node says the cluster is ok; a
    call's patience counts from its start, its wait for a free connection behind
    the worker's other tasks included.)
    """
    if find_redis_server() is None:
        pytest.skip(MISSING_REASON)
    cluster = await asyncio.to_thread(
        LocalCluster.start, tmp_path / "cluster", masters=3, persistent=True,
        node_timeout_ms=1000,
    )
    try:
        template = HostPlan(pages=12)
        async with BenchServer.mixed(40, {"partial": 1, "allow": 1}, template=template) as srv:
            lists = split_urls(host_urls(srv, 12), 2)
            total_pages = sum(expected(srv, u) == "fetched" for urls in lists for u in urls)
            patience = [["--unavailable-timeout", str(PATIENCE)],
                        ["--unavailable-timeout", "0.5"]]
            async with Fleet(cluster.url, "kill", lists, tmp_path, tasks=2000, delay=DELAY,
                             cluster=True, options=WORKER_OPTIONS,
                             worker_options=patience) as fleet:
                fleet.go()
                await wait_until(lambda: checks(srv).page_requests >= total_pages // 4, 60,
                                 "a quarter of the crawl")
                # The node the workers were given as the cluster's address.
                victim = cluster.nodes[0]
                killed = time.monotonic()
                await asyncio.to_thread(victim.stop, True)
                await asyncio.sleep(2.0)
                await asyncio.to_thread(victim.resume)
                resumed = time.monotonic()
                await asyncio.to_thread(cluster.wait_ok, PATIENCE / 2)
                outage = time.monotonic() - killed
                summaries = await fleet.results(STALL, progress=lambda: requests_seen(srv))
                outcomes = fleet.outcomes()
            found = checks(srv)
            stats = srv.stats()
        async with RedisStore(cluster.url, prefix="kill", cluster=True) as check:
            entries = [await check.load_robots(srv.base_url(i)) for i in range(40)]
    finally:
        await asyncio.to_thread(cluster.close)

    waiting, quitting = summaries
    assert waiting["store_errors"] == waiting["errors"] == 0, (
        outage, waiting["messages"], fleet.log_path(0).read_text())
    assert waiting["answered"] == waiting["urls"]
    # (The impatient one may end while the cluster is still down: its last host
    # states are then not written, and its close says so.)
    assert waiting["close_error"] == ""
    assert_outage_survived(srv, quitting, outcomes, found, stats, resumed)
    assert all(entry is not None for entry in entries)


async def test_gate_fails_closed_when_redis_is_down_at_start() -> None:
    # A port held bound, never listening: refused, and no other test's server takes it
    # meanwhile (a port found free and let go was once a web server's by the time
    # the store asked, beside the soaks).
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        await _fails_closed_when_redis_is_down_at_start(held.getsockname()[1])


async def _fails_closed_when_redis_is_down_at_start(port: int) -> None:
    async with BenchServer([HostPlan("allow")]) as srv:
        url = f"redis://127.0.0.1:{port}/0"  # nothing listens there
        gate = RobotGate(AGENT, delay=DELAY,
                         store=RedisStore(url, prefix="down", unavailable_timeout=0.5))
        try:
            with pytest.raises(StoreError, match="unreachable for") as opened:
                await gate.open()
            assert url in str(opened.value)
            started = time.monotonic()
            with pytest.raises(StoreError, match="unreachable for"):
                await gate.fetch(srv.url(0, "/page/1"))
            assert time.monotonic() - started >= 0.5  # it waited for Redis first
        finally:
            await gate.close()
        robots = srv.host_stats(0)
    assert robots.robots_requests == 0 and robots.page_requests == 0


# -- back-off -------------------------------------------------------------------


async def test_a_back_off_one_worker_earned_slows_every_worker(
    redis_target: tuple[str, bool], prefix: str
) -> None:
    # Worker A's page gets a 429 without Retry-After: its back-off (0.5 s, the base)
    # must hold worker B too, which already paces that host and never saw a 429.
    redis_url, cluster = redis_target
    plan = HostPlan("allow", page_status=429, page_status_times=1)
    async with BenchServer([plan]) as srv:
        a, b = (RobotGate(AGENT, delay=0.05,
                          store=RedisStore(redis_url, prefix=prefix, cluster=cluster))
                for _ in range(2))
        async with a, b:
            assert await b.allowed(srv.url(0, "/page/0"))  # B's robots.txt request
            async with a.fetch(srv.url(0, "/page/1")) as resp:
                assert resp.status == 429
            for i in range(2, 5):
                async with b.fetch(srv.url(0, f"/page/{i}")) as resp:
                    assert resp.status == 200
            assert (a.stats["backoffs"], b.stats["backoffs"]) == (1, 0)
        s = srv.host_stats(0)
    assert s.page_requests == 4 and s.robots_requests == 1
    assert s.min_interval is not None and s.min_interval >= 0.45


# -- foreign data ---------------------------------------------------------------


async def test_foreign_data_under_the_prefix(
    redis_target: tuple[str, bool], prefix: str
) -> None:
    redis_url, cluster = redis_target
    raw: Any = (RedisCluster if cluster else aioredis.Redis).from_url(redis_url)
    try:
        await _foreign_data(redis_url, cluster, prefix, raw)
    finally:
        await raw.aclose()


async def _foreign_data(redis_url: str, cluster: bool, prefix: str, raw: Any) -> None:
    async with BenchServer([HostPlan("allow")] * 3) as srv:
        origins = [srv.base_url(i) for i in range(3)]
        # Host 0: its robots.txt entry is a list; host 1: its pacing time is text
        # (pacing is per politeness group: per host name by default).
        await raw.rpush(f"{prefix}:robots:{{{origins[0]}}}", "not", "ours")
        await raw.set(f"{prefix}:tat:{{host:{srv.hosts[1]}}}", "soon")
        async with RobotGate(AGENT, delay=DELAY,
                             store=RedisStore(redis_url, prefix=prefix, cluster=cluster)) as gate:
            with pytest.raises(StoreError, match="foreign or damaged data") as bad_robots:
                await gate.fetch(srv.url(0, "/page/1"))
            with pytest.raises(StoreError, match="not a pacing time") as bad_tat:
                await gate.fetch(srv.url(1, "/page/1"))
            # Clean origins under the same prefix are unaffected.
            async with gate.fetch(srv.url(2, "/page/1")) as resp:
                assert resp.status == 200
        stats = [srv.host_stats(i) for i in range(3)]
        # A prefix that holds another application's data is refused at open.
        await raw.set(f"{prefix}x:meta", "someapp/3")
        gate = RobotGate(AGENT, store=RedisStore(redis_url, prefix=f"{prefix}x",
                                                 cluster=cluster))
        try:
            with pytest.raises(StoreError, match="another application"):
                await gate.open()
        finally:
            await gate.close()
    assert f"{prefix}:robots:{{{origins[0]}}}" in str(bad_robots.value)
    assert f"{prefix}:tat:{{host:{srv.hosts[1]}}}" in str(bad_tat.value)
    assert [s.page_requests for s in stats] == [0, 0, 1]
    # Neither robots.txt was fetched: host 0's entry is foreign, and host 1's request
    # would need a fleet slot, which its damaged pacing time cannot give.
    assert [s.robots_requests for s in stats] == [0, 0, 1]
