"""A crawl on a machine that runs short (issue 91): out of file descriptors, memory or
ports is the crawler's failure, never the site's; the URL is asked again, boundedly."""

from __future__ import annotations

import errno

import pytest

from robotgate.crawl import CrawlResult, crawl
from robotgate.crawl import page as page_module
from robotgate.policy.fetch import LocalFailure
from tests.support.crawl_gate import LinkGate, Page


class ShortGate(LinkGate):
    """Each URL's request fails for want of a descriptor ``short`` times (as aiohttp's
    connector error does: an OSError carrying EMFILE), and each origin's robots.txt
    ``robots_short`` times (as the gate's robots.txt cache gives it up)."""

    def __init__(self, short: int, robots_short: int = 0) -> None:
        super().__init__()
        self.short = short
        self.robots_short = robots_short
        self.tries: dict[str, int] = {}
        self.robots_tries: dict[str, int] = {}

    async def allowed(self, url: str) -> bool:
        origin = self.pace_key(url)
        tries = self.robots_tries[origin] = self.robots_tries.get(origin, 0) + 1
        if tries <= self.robots_short:
            raise LocalFailure(f"{origin}/robots.txt", "open files (EMFILE)", "raise it",
                               errno.EMFILE)
        return True

    def fetch(self, url: str) -> ShortFetch:  # type: ignore[override]
        return ShortFetch(self, url)


class ShortFetch:
    def __init__(self, gate: ShortGate, url: str) -> None:
        self.gate = gate
        self.url = url

    async def __aenter__(self) -> Page:
        gate = self.gate
        tries = gate.tries[self.url] = gate.tries.get(self.url, 0) + 1
        if tries <= gate.short:
            raise OSError(errno.EMFILE, "Too many open files")
        gate.fetched.append(self.url)
        return Page(self.url)

    async def __aexit__(self, *exc: object) -> None:
        return None


async def noop(url: str, resp: Page) -> None:
    return None


URLS = [f"http://h{i}.example/page" for i in range(6)]


@pytest.fixture
def short_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page_module, "_LOCAL_PAUSE", 0.001)
    monkeypatch.setattr(page_module, "_LOCAL_PAUSE_MAX", 0.002)


@pytest.mark.usefixtures("short_pauses")
async def test_a_url_this_machine_could_not_send_is_asked_again_not_failed() -> None:
    gate = ShortGate(short=1, robots_short=1)
    results: list[CrawlResult] = []
    summary = await crawl(gate, URLS, noop, concurrency=3, retries=0,
                          on_result=results.append)
    assert sorted(gate.fetched) == URLS  # each once its descriptor freed
    assert (summary.pages, summary.errors, summary.unreachable, summary.skipped) == (6, 0, 0, 0)
    assert summary.local_failures == 12  # its robots.txt, then its page: not the site's
    assert "EMFILE" in summary.local_failure
    local = [r for r in results if r.local]
    assert len(local) == 12 and all(r.kind == "retried" for r in local)
    assert all(r.attempts == 1 for r in results)  # not counted against retries=0


@pytest.mark.usefixtures("short_pauses")
async def test_a_shortage_that_lasts_ends_as_the_crawlers_error() -> None:
    gate = ShortGate(short=10 ** 6)
    results: list[CrawlResult] = []
    summary = await crawl(gate, URLS[:2], noop, concurrency=2, on_result=results.append)
    assert gate.fetched == []
    assert summary.errors == 2 and summary.unreachable == 0
    tries = page_module.LOCAL_RETRIES + 1
    assert gate.tries == {url: tries for url in URLS[:2]}  # bounded
    last = [r for r in results if not r.retried]
    assert len(last) == 2 and all(r.local and "EMFILE" in str(r.error) for r in last)
