"""Send requests through Scrapy, with RobotGateMiddleware or without, and print how many
got an answer (JSON): the Scrapy driver of tests/contract/test_redirect_hops.py, in a
subprocess so that each run gets a fresh reactor::

    python -m tests.contract.scrapy_hops_runner '{"requests": [[method, url, headers,
                                                  body or null], ...], "gate": true}'

Scrapy's ``RedirectMiddleware`` follows each redirect; the server records what the
redirect's target heard.  ``gate``: robotgate's middleware in place of Scrapy's
robots.txt middleware (else neither: Scrapy's own hop); ``settings``: Scrapy settings
of the run's own (``HTTPAUTH_USER``...).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    requests: list[list[Any]] = config["requests"]
    answered: list[int] = []

    class Hops(scrapy.Spider):
        name = "hops"

        async def start(self) -> Any:
            for method, url, headers, body in requests:
                yield scrapy.Request(url, method=method, headers=headers,
                                     body=body.encode() if body is not None else None,
                                     callback=self.parse, errback=self.failed,
                                     dont_filter=True)

        def parse(self, response: Any) -> Any:
            answered.append(response.status)
            yield from ()

        def failed(self, failure: Any) -> Any:
            print(f"failed: {failure.value!r}", file=sys.stderr)
            yield from ()

    middlewares: dict[str, int | None] = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None}
    if config["gate"]:
        middlewares["robotgate.integrations.scrapy.RobotGateMiddleware"] = 100
    process = CrawlerProcess(settings={
        "ROBOTSTXT_OBEY": bool(config["gate"]),
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "RETRY_ENABLED": False,
        "COOKIES_ENABLED": False,  # the Cookie header as the request carries it
        "USER_AGENT": "HopBot/1.0",
        "DOWNLOADER_MIDDLEWARES": middlewares,
        "DOWNLOAD_DELAY": 0,
        "ROBOTGATE_DELAY": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "ROBOTGATE_IS_PRIVATE": "tests.contract.test_redirect_hops.nothing_private",
        **config.get("settings", {}),
    })
    process.crawl(Hops)
    process.start()
    print(json.dumps(len(answered)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
