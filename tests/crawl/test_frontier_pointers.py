"""The frontier asks robots.txt of a link, or of a sitemap's entry, as its page's pointer
(``pointed_by``), as it fetches it; the user's own input is asked as input."""

from __future__ import annotations

from robotgate.crawl import CrawlResult, crawl
from robotgate.crawl.gate_interface import Opening
from robotgate.decision import Decision
from robotgate.robots.sitemap import SitemapEntry
from tests.support.crawl_gate import LinkGate, Page

HOME = "http://www.site.example/"
LINK = "http://other.example/page"
REFUSED = Decision(False, "refused a pointer (the test's rule)", outcome="redirect-refused")


class PointerGate(LinkGate):
    """Records what each question and request was pointed by; refuses a pointer to
    a URL with ``/refused`` in it (as the private-network rule would)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str, str | None]] = []

    async def allowed(self, url: str, *, pointed_by: str | None = None) -> bool:
        self.asked.append(("allowed", url, pointed_by))
        return not (pointed_by is not None and "/refused" in url)

    async def decide(self, url: str, *, pointed_by: str | None = None) -> Decision:
        self.asked.append(("decide", url, pointed_by))
        if pointed_by is not None and "/refused" in url:
            return REFUSED
        return Decision(True, "allowed")

    def fetch(self, url: str, *, pointed_by: str | None = None) -> Opening[Page]:
        # The request made (before robots.txt is asked, its route read); ``fetched``
        # lists those sent.
        self.asked.append(("fetch", url, pointed_by))
        return super().fetch(url)


def links(url: str, resp: Page) -> list[str]:
    return [LINK, "http://other.example/refused"] if url == HOME else []


async def test_a_link_is_asked_and_fetched_as_its_page_s_pointer() -> None:
    gate = PointerGate()
    found: list[CrawlResult] = []
    await crawl(gate, [HOME], links, scope="any", on_result=found.append)
    assert ("allowed", HOME, None) in gate.asked and ("fetch", HOME, None) in gate.asked
    assert ("allowed", LINK, HOME) in gate.asked and ("fetch", LINK, HOME) in gate.asked
    refused = "http://other.example/refused"
    assert ("decide", refused, HOME) in gate.asked
    assert refused not in gate.fetched and HOME in gate.fetched and LINK in gate.fetched
    [skipped] = [r for r in found if r.url == refused]
    assert skipped.decision == REFUSED and skipped.kind == "skipped"


async def test_a_sitemap_s_entry_is_asked_as_that_sitemap_s_pointer() -> None:
    gate = PointerGate()
    sitemap = "http://www.site.example/sitemap.xml"
    await crawl(gate, [SitemapEntry(LINK, sitemap=sitemap), HOME], lambda u, r: [])
    assert ("allowed", LINK, sitemap) in gate.asked and ("fetch", LINK, sitemap) in gate.asked
    assert ("allowed", HOME, None) in gate.asked  # the user's own input
