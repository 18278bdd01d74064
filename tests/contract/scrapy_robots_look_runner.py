"""The Scrapy row of tests/contract/test_robots_last_look.py, in a subprocess (a fresh
reactor each run)::

    python -m tests.contract.scrapy_robots_look_runner REFUSED_URL HELD_URL

Inside a running Scrapy crawl with RobotGateMiddleware, sends a robots.txt request to
``REFUSED_URL`` with a permit that does not hold, then one to ``HELD_URL`` with a permit
that holds, through the middleware's robots.txt transport (Scrapy's engine).  Prints one
JSON line: what the first raised, the second's status, and each permit's looks.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

from robotgate.integrations.scrapy import RobotGateMiddleware
from robotgate.integrations.scrapy.middleware import ScrapyRobotsTransport
from robotgate.policy.fetch_flow import RobotsRequest
from tests.contract.scrapy_paths_runner import MIDDLEWARES
from tests.contract.test_robots_last_look import AGENT, Looked


def main(argv: list[str]) -> int:
    refused_url, held_url = argv[1], argv[2]
    refused, held = Looked(holds=False), Looked(holds=True)
    got: dict[str, Any] = {}

    class Robots(scrapy.Spider):
        name = "robots"

        async def start(self) -> Any:
            engine = self.crawler.engine
            assert engine is not None
            for middleware in engine.downloader.middleware.middlewares:
                if isinstance(middleware, RobotGateMiddleware):
                    await middleware._open()  # its handlers wrapped, as a first request does
            transport = ScrapyRobotsTransport(self.crawler, {"User-Agent": AGENT})
            try:
                await transport.send(RobotsRequest(refused_url, permit=refused))
                got["refused"] = "sent"
            except Exception as exc:
                got["refused"] = type(exc).__name__
            answer = await transport.send(RobotsRequest(held_url, permit=held))
            got["status"] = answer.status
            return
            yield  # an async generator that yields no request

    process = CrawlerProcess(settings={
        "ROBOTSTXT_OBEY": True, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "ERROR",
        "USER_AGENT": AGENT,
        "DOWNLOADER_MIDDLEWARES": MIDDLEWARES})
    process.crawl(Robots)
    process.start()
    print(json.dumps({**got, "refused_looks": refused.looks, "held_looks": held.looks}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
