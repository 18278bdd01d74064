"""A Scrapy crawl with ROBOTSTXT_OBEY through the robots.txt parser PARSER, following links from
START for LIMIT pages; prints the parsers Scrapy announced and its stats as one JSON line.

    python tests/support/children/scrapy_parser_crawl.py START LIMIT PARSER
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess

start, limit, parser = sys.argv[1], int(sys.argv[2]), sys.argv[3]
parsers: list[str] = []
stats: dict[str, Any] = {}


class Site(scrapy.Spider):
    name = "site"
    start_urls = [start]  # noqa: RUF012 (Scrapy's own attribute)

    def parse(self, response: Any, **kwargs: Any) -> Iterator[Any]:
        yield from response.follow_all(css="a", callback=self.parse)


def parsed(robotparser: object, **kwargs: Any) -> None:
    parsers.append(type(robotparser).__module__ + "." + type(robotparser).__name__)


def closed(spider: scrapy.Spider, reason: str) -> None:
    assert spider.crawler.stats is not None
    got = spider.crawler.stats.get_stats()
    stats.update({k: v for k, v in got.items() if isinstance(v, (int, float, str))})


process = CrawlerProcess(settings={
    "ROBOTSTXT_OBEY": True,
    "ROBOTSTXT_PARSER": parser,
    "USER_AGENT": "TestBot/1.0 (+https://example.com/bot)",
    "CLOSESPIDER_PAGECOUNT": limit,
    "DOWNLOAD_DELAY": 0.05,
    "RANDOMIZE_DOWNLOAD_DELAY": False,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "ERROR",
})
crawler = process.create_crawler(Site)
crawler.signals.connect(parsed, signal=signals.robots_parsed)
crawler.signals.connect(closed, signal=signals.spider_closed)
process.crawl(crawler)
process.start()
print(json.dumps({"parsers": parsers, "stats": stats}))
