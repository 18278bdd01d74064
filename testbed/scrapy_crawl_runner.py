"""Run one Scrapy crawl with given settings and print what it saw as one JSON line.

Used by the Scrapy middleware tests and benchmarks/clients_bench.py in a
subprocess, so that each crawl gets a fresh reactor::

    python -m testbed.scrapy_crawl_runner '{"urls": [...], "settings": {...}}'

Config keys: ``urls`` (requested in order), ``settings`` (Scrapy settings),
``follow`` (follow links in pages), ``copy_meta`` (followed links made with
``meta=response.meta``), ``robotgate`` (enable RobotGateMiddleware
instead of Scrapy's RobotsTxtMiddleware; default true), ``probe`` (``[url, agent]``
pairs to ask each parser that ``robots_parsed`` announces), ``meta`` (each
start request's meta, e.g. its ``proxy``).
The output holds Scrapy's numeric stats, the pages seen (with their
``robotgate_usage`` meta) and the requests dropped (with the robotgate
decision when there is one).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import AsyncCrawlerProcess, CrawlerProcess

MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "robotgate.integrations.scrapy.RobotGateMiddleware": 100,
}


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    seen: dict[str, Any] = {"pages": [], "dropped": [], "errors": [], "stats": {}, "usage": {}}
    follow = bool(config.get("follow"))
    copy_meta = bool(config.get("copy_meta"))

    class Site(scrapy.Spider):
        name = "site"

        async def start(self) -> Any:
            for url in config["urls"]:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed,
                                     dont_filter=bool(config.get("dont_filter")),
                                     meta=dict(config.get("meta", {})))

        def parse(self, response: Any) -> Any:
            seen["pages"].append([response.url, response.status])
            if "robotgate_usage" in response.meta:
                seen["usage"][response.url] = response.meta["robotgate_usage"]
            if follow:
                yield from response.follow_all(css="a", callback=self.parse,
                                               errback=self.failed,
                                               meta=response.meta if copy_meta else None)

        def failed(self, failure: Any) -> None:
            exc = failure.value
            decision = getattr(exc, "decision", None)
            entry = {"url": failure.request.url, "error": type(exc).__name__,
                     "message": str(exc),
                     "kinds": [f"{k.__module__}.{k.__qualname__}" for k in type(exc).__mro__]}
            if decision is not None:
                entry["outcome"] = decision.outcome
                entry["line"] = decision.line
            seen["dropped"].append(entry)

    def closed(spider: Any, reason: str) -> None:
        seen["reason"] = reason

    def robots_parsed(robotparser: Any, request: Any) -> None:
        seen.setdefault("robots_parsed", []).append({
            "request": request.url, "parser": type(robotparser).__name__,
            "allowed": [robotparser.allowed(url, agent) for url, agent in config.get("probe", [])],
        })

    settings = {
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "USER_AGENT": "TestBot/1.0 (+https://example.com/bot)",
        **config.get("settings", {}),
    }
    if config.get("robotgate", True):
        settings["DOWNLOADER_MIDDLEWARES"] = MIDDLEWARES
    # Without a Twisted reactor (Scrapy 2.19's TWISTED_REACTOR_ENABLED = False)
    # only AsyncCrawlerProcess runs.
    reactorless = settings.get("TWISTED_REACTOR_ENABLED") is False
    process = (AsyncCrawlerProcess if reactorless else CrawlerProcess)(settings=settings)
    crawler = process.create_crawler(Site)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    crawler.signals.connect(robots_parsed, signal=signals.robots_parsed)
    process.crawl(crawler)
    process.start()
    # Read once the crawl is over: every spider_closed handler has written its stats.
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    seen["stats"] = {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
