"""Three ``robotgate fetch`` workers on one Redis, their JSON lines merged: the report
checks every gap against the interval owed.  In a fleet a request waits for its turn
inside the gate (the fleet-wide slot), so a line's ``started`` is the time the request
left, not the time the crawl asked for it; the server's own records agree.
"""

from __future__ import annotations

import asyncio
import io
import sys
from pathlib import Path

import pytest

from robotgate.cli.html_report import read_lines, read_story
from testbed.children import child_env
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan
from tests.cli.test_cli import AGENT

pytestmark = pytest.mark.slow

WORKERS = 3
DELAY = 0.25


@pytest.mark.soak  # a fleet of processes: CI runs it every time
async def test_merged_logs_of_a_fleet_show_no_false_short_gap(
        tmp_path: Path, own_redis: RedisServer) -> None:
    plans = [HostPlan("allow", crawl_delay=0.0)] * 2
    async with BenchServer(plans) as srv:
        urls = [srv.url(h, f"/page/{i}") for i in range(8) for h in range(2)]
        logs = [tmp_path / f"worker{w}.jsonl" for w in range(WORKERS)]
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-m", "robotgate", "fetch", "--agent", AGENT, "--store",
            own_redis.url, "--delay", str(DELAY), "--concurrency", "4", "-q", "-o", str(log),
            *urls[w::WORKERS], env=child_env(), stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE) for w, log in enumerate(logs)]
        errors = await asyncio.wait_for(
            asyncio.gather(*(proc.communicate() for proc in procs)), 120)
        stats = srv.stats()
    assert [proc.returncode for proc in procs] == [0] * WORKERS, errors
    # The servers saw every page once, never sooner than the delay after the one before.
    for host in srv.hosts:
        seen = stats[host]
        assert seen.page_requests == 8
        assert seen.min_interval is not None and seen.min_interval >= DELAY - 0.002
    merged = b"".join(log.read_bytes() for log in logs)
    story = read_story(read_lines(io.BytesIO(merged)))
    assert story.total("pages") == len(urls)
    assert story.short_gaps == 0, [
        (h.key, s) for h in story.hosts.values() for s in h.shorts]
