"""examples/crawl.py: a multi-site crawler on ``gate.crawl``, against the loopback server."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from testbed.server import BenchServer, HostPlan, page_paths

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "crawl.py"
DELAY = 0.05


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("robotgate_example_crawl", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
async def test_the_crawl_example_covers_two_sites_politely() -> None:
    crawl = load()
    pages = 10
    async with BenchServer([HostPlan("partial", pages=pages)] * 2 + [HostPlan("allow")]) as srv:
        summary = await crawl.main([srv.url(0, "/page/0"), srv.url(1, "/page/0")],
                                   delay=DELAY, concurrency=3)
        stats = srv.stats()
    allowed = [p for p in page_paths(pages) if not p.startswith("/private/")]
    assert summary.pages == 2 * len(allowed) and summary.skipped > 0
    for i in (0, 1):
        host = stats[srv.hosts[i]]
        assert host.robots_requests == 1 and host.disallowed_page_requests == 0
        assert host.distinct_pages == len(allowed) == host.page_requests
        assert host.min_interval is not None and host.min_interval >= DELAY
    other = stats[srv.hosts[2]]  # linked from nowhere, never started from
    assert other.robots_requests == 0 and other.page_requests == 0


async def test_the_crawl_example_stops_at_its_page_budget() -> None:
    crawl = load()
    async with BenchServer([HostPlan("allow", pages=50)]) as srv:
        summary = await crawl.main([srv.url(0, "/page/0")], max_pages=5, delay=0.02,
                                   concurrency=1)
    assert summary.stopped and summary.pages == 5


@pytest.mark.slow
async def test_the_crawl_example_runs_as_a_script() -> None:
    async with BenchServer([HostPlan("partial", pages=6)]) as srv:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLE), srv.url(0, "/page/0"), "--delay", "0.02",
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "pages fetched" in out.decode() and "skipped by robots.txt" in out.decode()
