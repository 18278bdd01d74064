"""What a crawl keeps per origin and per page is bounded (issue 91): the host tallies
and the skipped origins of its summary, and an unnamed crawl's memory of the URLs it
has seen, a fixed-size digest each, whatever the URL's length."""

from __future__ import annotations

from robotgate.crawl import CrawlResult, CrawlSummary, Frontier, HostSummary, crawl
from robotgate.crawl.discovery import digest_key
from robotgate.decision import Decision
from robotgate.store.crawl_state import MemoryCrawlState
from robotgate.urls import resource_key
from tests.crawl.test_frontier import FakeGate, noop

FIELDS = ("pages", "skipped", "errors", "failed", "unreachable", "starts")


def tallied(summary: CrawlSummary) -> dict[str, int]:
    """Each count summed over the kept tallies and ``other_hosts``."""
    every = [*summary.hosts.values(), summary.other_hosts]
    return {name: sum(getattr(t, name) for t in every) for name in FIELDS}


async def test_host_tallies_are_bounded_and_still_sum_to_the_totals() -> None:
    hosts = 60
    dead = [f"http://h{i}.example" for i in range(0, hosts, 5)]
    gate = FakeGate(delay=0, latency=0, unreachable=dead)
    urls = [f"http://h{i}.example/{page}" for i in range(hosts)
            for page in ("page/0", "page/1", "private/2")]
    summary = CrawlSummary(max_hosts=8)
    await crawl(gate, urls, noop, concurrency=4, summary=summary)
    assert summary.done == len(urls)
    assert len(summary.hosts) == 8
    # The frontier takes hosts in turn: a host pushed out may come back, and go again.
    assert summary.hosts_folded >= hosts - 8
    sums = tallied(summary)
    assert sums["pages"] == summary.pages == 2 * (hosts - hosts // 5)
    assert sums["skipped"] == summary.skipped == hosts - hosts // 5
    assert sums["unreachable"] == summary.unreachable == 3 * (hosts // 5)
    assert sums["starts"] == summary.pages
    # A host pushed out has no interval: a sum of hosts has none.
    assert summary.other_hosts.mean_interval() is None
    # Origins skipped as a whole: the first max_hosts kept, the rest counted.
    assert len(summary.skipped_origins) == 8
    assert summary.skipped_origins_more == 3 * (hosts // 5 - 8)  # their URLs


def test_the_least_recently_used_tally_is_folded_first() -> None:
    summary = CrawlSummary(max_hosts=2)
    summary.host("a").pages = 1
    summary.host("b").pages = 2
    summary.host("a").pages += 1  # "a" used again: "b" is the older
    summary.host("c")
    assert list(summary.hosts) == ["a", "c"]
    assert summary.other_hosts == HostSummary(pages=2) and summary.hosts_folded == 1


def test_a_skipped_origin_is_kept_once_however_many_urls() -> None:
    summary = CrawlSummary(max_hosts=1)
    no = Decision(False, "robots.txt answered 503", outcome="unreachable")
    for url in ("http://a.example/1", "http://a.example/2", "http://b.example/1"):
        summary.finished(CrawlResult(url, key=url.rsplit("/", 1)[0], decision=no))
    assert summary.skipped_origins == {"http://a.example": "robots.txt answered 503"}
    assert summary.skipped_origins_more == 1 and summary.unreachable == 3


async def test_an_unnamed_crawl_remembers_digests_not_urls() -> None:
    long_path = "/page/" + "x" * 3000
    urls = [f"http://h0.example{long_path}{i}" for i in range(3)]
    gate = FakeGate(delay=0, latency=0)
    frontier = Frontier(gate, [*urls, urls[0] + "#again", "http://H0.example:80" + long_path + "1"],
                        noop, concurrency=2)
    summary = await frontier.run()
    assert summary.pages == 3 and summary.duplicates == 2  # one resource key: one page
    state = frontier.state
    assert isinstance(state, MemoryCrawlState)
    remembered = set(state._status)
    assert remembered == {digest_key(resource_key(url)) for url in urls}
    assert {len(key) for key in remembered} == {20}


async def test_a_state_of_the_callers_keeps_its_keys() -> None:
    # A state handed in may be read back (a named crawl's is): its keys stay the keys.
    state = MemoryCrawlState(max_seen=10)
    url = "http://h0.example/page/0"
    frontier = Frontier(FakeGate(delay=0, latency=0), [url], noop, state=state)
    await frontier.run()
    assert set(state._status) == {resource_key(url)}


def test_digests_differ_for_keys_that_share_a_long_prefix() -> None:
    prefix = "http://example.com/" + "a" * 5000
    digests = {digest_key(prefix + str(i)) for i in range(10_000)}
    assert len(digests) == 10_000 and {len(d) for d in digests} == {20}


def test_the_printed_summary_says_when_hosts_were_summed() -> None:
    from robotgate.cli.report import summary_text

    summary = CrawlSummary(max_hosts=1)
    no = Decision(False, "robots.txt answered 503", outcome="unreachable")
    for url in ("http://a.example/1", "http://b.example/1", "http://b.example/2"):
        summary.finished(CrawlResult(url, key=url.rsplit("/", 1)[0], decision=no))
    text = summary_text(summary, interrupted=False)
    assert "skipped origins (1): the whole site" in text
    assert "(and 2 URLs of origins not listed)" in text
    assert "1 tallies of less recently busy hosts, summed: 0 fetched" in text
    assert "1 unreachable" in text
    assert text.endswith("; 1 host listed, the most recently busy (others summed above)")
