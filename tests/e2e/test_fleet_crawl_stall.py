"""A worker of a shared crawl stopped (SIGSTOP) longer than its lease, then let go: its
servers are taken over, and it sends nothing more under the leases it lost.  Judged by
the loopback server's kernel receive times (``SO_TIMESTAMPNS``): no two requests to
one host closer than the delay, robots.txt included, and at most the pages that were
on the wire when it stopped (or fetched and waiting for their write) fetched twice."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from testbed.fleet_crawl import worker_processes
from testbed.server import BenchServer, HostPlan
from tests.e2e.test_fleet_crawl import finish, pages_asked, requests_by_page, short_gaps

DELAY = 0.2
LEASE = 6.0  # the crawl's lease (robotgate.store.redis.crawl.LEASE)
CONCURRENCY = 8


@pytest.mark.soak  # CI runs it every time; the README's run leaves it out
@pytest.mark.slow
async def test_a_worker_stopped_past_its_lease_sends_nothing_under_it_when_let_go(
        redis_url: str, prefix: str, tmp_path: Path) -> None:
    hosts, pages, workers = 12, 40, 3
    async with BenchServer([HostPlan("allow", pages=pages)] * hosts) as srv:
        seeds = [srv.url(h, "/page/0") for h in range(hosts)]
        async with worker_processes([seeds[w::workers] for w in range(workers)], tmp_path,
                                    redis_url, prefix, "--delay", str(DELAY), "--pages",
                                    str(pages), "--concurrency", str(CONCURRENCY)) as procs:
            runs = [asyncio.ensure_future(finish(p, 180)) for p in procs]
            await pages_asked(srv, hosts * 3)  # under way: every worker leases servers
            victim = procs[0]
            os.kill(victim.pid, signal.SIGSTOP)
            try:
                # Past its lease: the others take its servers over and crawl them.
                await asyncio.sleep(LEASE + 3)
            finally:
                os.kill(victim.pid, signal.SIGCONT)
            results = await asyncio.gather(*runs)
        fetched = requests_by_page(srv)
        assert len(fetched) == hosts * pages  # nothing lost
        # The stopped worker's pages on the wire, or fetched and waiting for their write,
        # at most: no URL it was handed and had not sent went out after its lease.
        duplicates = sum(n - 1 for n in fetched.values())
        assert duplicates <= CONCURRENCY, duplicates
        assert short_gaps(srv, DELAY) == []
        assert {r["fleet_done"] for r in results} == {hosts * pages}
        assert sum(r["pages"] for r in results) >= hosts * pages
