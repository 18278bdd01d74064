"""robotgate.integrations.scrapy: Scrapy's RobotParser interface, with and without Scrapy."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from robotgate.integrations.scrapy import RobotgateRobotParser
from testbed.server import BenchServer, HostPlan
from tests.support import CHILDREN

PARSER = "robotgate.integrations.scrapy.RobotgateRobotParser"
BODY = b"User-agent: *\nDisallow: /private/\nAllow: /private/ok$\nCrawl-delay: 1.5\n"


class FakeCrawler:
    """What Scrapy's crawler offers the parser: a spider and settings with .get()."""

    def __init__(self, **settings: Any) -> None:
        self.spider = object()
        self.settings = settings


def test_duck_typed_interface_without_scrapy() -> None:
    crawler = FakeCrawler()
    rp = RobotgateRobotParser.from_crawler(crawler, BODY)
    assert rp.spider is crawler.spider
    assert rp.allowed("https://example.com/page", "MyBot/1.0") is True
    assert rp.allowed("https://example.com/private/x", b"MyBot/1.0") is False
    assert rp.allowed(b"https://example.com/private/ok", b"MyBot/1.0") is True
    assert rp.allowed("https://example.com/private/ok/more", "MyBot/1.0") is False
    assert rp.crawl_delay(b"MyBot/1.0") == 1.5
    decision = rp.decide("https://example.com/private/x", "MyBot")
    assert decision.rule is not None and decision.rule.line == 2
    # Scrapy builds one with an empty body to check the parser's dependencies.
    empty = RobotgateRobotParser.from_crawler(None, b"")
    assert empty.allowed("https://example.com/anything", "MyBot") is True
    assert empty.spider is None


def test_bodies_are_decoded_tolerantly() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /caf\xc3\xa9\nDisallow: /bad\xff\xfe\n"
    rp = RobotgateRobotParser(body)
    assert rp.allowed("https://example.com/caf%C3%A9/menu", "Bot") is False
    assert rp.allowed("https://example.com/café", "Bot") is False
    assert rp.allowed("https://example.com/other", "Bot") is True
    assert RobotgateRobotParser("User-agent: *\nDisallow: /\n").allowed("/x", "Bot") is False


def test_dialect_setting() -> None:
    body = b"User-agent: *\nDisallow: /a\nAllow: /a/b\n"
    rfc = RobotgateRobotParser.from_crawler(FakeCrawler(), body)
    classic = RobotgateRobotParser.from_crawler(FakeCrawler(ROBOTGATE_DIALECT="classic"), body)
    # RFC 9309: the longest match (Allow) wins; the classic standard knows only Disallow.
    assert rfc.allowed("https://example.com/a/b", "Bot") is True
    assert classic.allowed("https://example.com/a/b", "Bot") is False
    with pytest.raises(ValueError, match="ROBOTGATE_DIALECT"):
        RobotgateRobotParser.from_crawler(FakeCrawler(ROBOTGATE_DIALECT="google"), body)


@pytest.mark.slow
def test_module_does_not_import_scrapy() -> None:
    code = "import sys, robotgate.integrations.scrapy; print('scrapy' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


# -- with Scrapy itself -------------------------------------------------------


def test_scrapy_builds_and_uses_the_parser() -> None:
    pytest.importorskip("scrapy")
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
    from scrapy.utils.misc import build_from_crawler
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(
        settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_PARSER": PARSER}
    )
    middleware = RobotsTxtMiddleware(crawler)  # loads the class by name and tries it
    loaded: object = middleware._parserimpl  # Scrapy annotates the class as an instance
    assert loaded is RobotgateRobotParser
    rp = build_from_crawler(RobotgateRobotParser, crawler, BODY)
    assert isinstance(rp, RobotgateRobotParser)
    assert rp.allowed("https://example.com/private/x", b"Scrapy/2 (+https://scrapy.org)") is False
    assert rp.allowed("https://example.com/public", b"Scrapy/2 (+https://scrapy.org)") is True


@pytest.mark.slow
async def test_a_real_scrapy_crawl_never_fetches_a_disallowed_page(tmp_path: Path) -> None:
    pytest.importorskip("scrapy")
    async with BenchServer([HostPlan("partial", pages=60)]) as srv:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILDREN / "scrapy_parser_crawl.py"), srv.url(0, "/page/0"), "15",
            PARSER,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=tmp_path,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 120)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        stats = srv.host_stats(0)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])
    # The class lives in robotgate.integrations.scrapy.parser; Scrapy loads it by its public name.
    assert seen["parsers"] == ["robotgate.integrations.scrapy.parser.RobotgateRobotParser"]
    scrapy_stats = seen["stats"]
    # Scrapy met links to /private/ pages and our parser turned them away.
    assert scrapy_stats.get("robotstxt/forbidden", 0) > 0
    assert stats.robots_requests == 1
    assert stats.page_requests >= 10
    assert stats.disallowed_page_requests == 0
    assert all(not r.path.startswith("/private/") for r in stats.page_log)
