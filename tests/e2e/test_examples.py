"""The programs in examples/ crawl the loopback benchmark server politely."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from testbed.server import BenchServer, HostPlan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DELAY = 0.1


def load(name: str) -> ModuleType:
    # By path, so that no other installed "examples" package can stand in.
    spec = importlib.util.spec_from_file_location(f"robotgate_example_{name}", EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def spider() -> ModuleType:
    return load("spider.py")


@pytest.fixture(scope="module")
def middleware() -> ModuleType:
    return load("middleware.py")


def test_extract_links(spider: ModuleType) -> None:
    html = (
        '<p><a href="/a">a</a> <a href="b?x=1#frag">b</a> <a href="/a">again</a>'
        '<a href="mailto:x@example.com">mail</a> <a>none</a>'
        '<a href="https://other.example/c">c</a></p>'
    )
    assert spider.extract_links(html, "http://h.example/dir/page") == [
        "http://h.example/a",
        "http://h.example/dir/b?x=1",
        "https://other.example/c",
    ]


@pytest.mark.slow
async def test_spider_crawls_breadth_first_and_politely(spider: ModuleType) -> None:
    async with BenchServer([HostPlan("partial", pages=100)]) as srv:
        crawl = await spider.main(srv.url(0, "/page/0"), max_pages=15, delay=DELAY)
        stats = srv.host_stats(0)
    assert len(crawl.fetched) == 15 and not crawl.failed
    assert all(status == 200 for _, status in crawl.fetched)
    # The site links to /private/ pages: the spider met them and left them alone.
    assert crawl.disallowed
    assert all("/private/" in url for url, _ in crawl.disallowed)
    assert stats.disallowed_page_requests == 0
    assert stats.page_requests == 15 and stats.distinct_pages == 15
    assert stats.robots_requests == 1
    assert stats.min_interval is not None and stats.min_interval >= DELAY
    assert stats.max_concurrent_pages == 1
    # Breadth first: page 0's own links come before anything they link to.
    fetched = [url for url, _ in crawl.fetched]
    assert fetched[0] == srv.url(0, "/page/0")
    assert set(fetched[1:4]) == {srv.url(0, f"/page/{i}") for i in (1, 2, 3)}


async def test_spider_stays_on_its_host_and_stops_when_nothing_is_left(
    spider: ModuleType,
) -> None:
    async with BenchServer([HostPlan("allow", pages=6), HostPlan("allow")]) as srv:
        crawl = await spider.main(srv.url(0, "/page/0"), max_pages=50, delay=0)
        other = srv.host_stats(1)
    assert len(crawl.fetched) == 6  # the whole small site, then it stops
    assert other.page_requests == 0 and other.robots_requests == 0


@pytest.mark.slow
async def test_middleware_example_paces_concurrent_requests(middleware: ModuleType) -> None:
    async with BenchServer([HostPlan("partial"), HostPlan("503_retry")]) as srv:
        urls = [srv.url(0, f"/page/{i}") for i in (0, 1, 2, 3, 5, 6)]
        urls += [srv.url(0, "/private/4"), srv.url(0, "/private/9"), srv.url(1, "/page/1")]
        results = await middleware.main(urls, delay=DELAY)
        stats = srv.stats()
    assert [results[u] for u in urls[:6]] == [200] * 6
    for url in urls[6:]:
        assert str(results[url]).startswith("skipped: ")
    assert "503" in str(results[srv.url(1, "/page/1")])
    first = stats[srv.hosts[0]]
    assert sum(s.disallowed_page_requests for s in stats.values()) == 0
    assert first.page_requests == 6 and first.robots_requests == 1
    assert first.min_interval is not None and first.min_interval >= DELAY
    assert stats[srv.hosts[1]].page_requests == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "expect"),
    [
        ("spider.py", ["/page/0", "--max-pages", "4"], "4 pages fetched"),
        ("middleware.py", ["/page/1", "/private/4"], "skip "),
    ],
)
async def test_examples_run_as_scripts(script: str, args: list[str], expect: str) -> None:
    async with BenchServer([HostPlan("partial")]) as srv:
        argv = [srv.url(0, a) if a.startswith("/") else a for a in args]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / script), *argv, "--delay", "0.05",
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        stats = srv.host_stats(0)
    assert proc.returncode == 0, err.decode()
    assert expect in out.decode()
    assert stats.disallowed_page_requests == 0 and stats.page_requests >= 1
