"""The Scrapy rows of tests/contract/test_fleet_last_look.py and
tests/contract/test_local_last_look.py, in a subprocess (a fresh reactor each run)::

    python -m tests.contract.scrapy_last_look_runner '{"urls": [...], "lag": 0.3,
                                                       "blocking": true,
                                                       "together": [...],
                                                       "settings": {...}}'

Sends the URLs one after the other through Scrapy with RobotGateMiddleware (on a Redis
store if ``settings`` names one), then the ``together`` URLs (if any) all at once;
once the first page is answered, the next connection Twisted's pool gives stands the
loop still for ``lag`` seconds before anything is written on it (``blocking`` false:
that connection alone is handed over ``lag`` seconds late).
Prints one JSON line: each URL's status (or error), every slot Redis granted on the
loop's clock (``[asked, wait, slack]``), the fleet's late slots, whether the lag
happened, and Scrapy's count of download exceptions.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from twisted.internet.task import deferLater
from twisted.web.client import HTTPConnectionPool

from robotgate.integrations.scrapy import RobotGateMiddleware
from robotgate.store.redis import RedisStore
from tests.contract.scrapy_paths_runner import MIDDLEWARES


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    urls: list[str] = config["urls"]
    together: list[str] = config.get("together", [])
    statuses: list[Any] = [None] * (len(urls) + len(together))
    grants: list[list[float]] = []
    lag = {"armed": False, "done": False, "late": -1, "exceptions": 0}

    reserve = RedisStore.reserve

    async def recorded(self: RedisStore, key: str, interval: float,
                       slack: float = 0.0) -> float | None:
        asked = asyncio.get_running_loop().time()
        wait = await reserve(self, key, interval, slack)
        grants.append([asked, wait or 0.0, slack])
        return wait

    RedisStore.reserve = recorded  # type: ignore[method-assign]
    get_connection = HTTPConnectionPool.getConnection

    def slow(self: HTTPConnectionPool, key: Any, endpoint: Any) -> Any:
        def opened(protocol: Any) -> Any:
            if lag["armed"] and not lag["done"]:
                lag["done"] = True
                if not config.get("blocking", True):  # this connection alone, late
                    from twisted.internet import reactor  # Scrapy's, installed by now

                    return deferLater(reactor, float(config["lag"]), lambda: protocol)
                time.sleep(float(config["lag"]))  # the whole loop stands still
            return protocol

        return get_connection(self, key, endpoint).addCallback(opened)

    HTTPConnectionPool.getConnection = slow  # type: ignore[method-assign]

    class Pages(scrapy.Spider):
        name = "pages"

        def _request(self, i: int) -> scrapy.Request:
            url = urls[i] if i < len(urls) else together[i - len(urls)]
            return scrapy.Request(url, callback=self.parse, errback=self.failed,
                                  dont_filter=True, cb_kwargs={"i": i})

        async def start(self) -> Any:
            yield self._request(0)

        def parse(self, response: Any, i: int) -> Any:
            statuses[i] = response.status
            if i + 1 < len(urls):
                lag["armed"] = True
                yield self._request(i + 1)
            elif i + 1 == len(urls):
                lag["armed"] = True
                for j in range(len(together)):
                    yield self._request(i + 1 + j)

        def failed(self, failure: Any) -> Any:
            statuses[failure.request.cb_kwargs["i"]] = type(failure.value).__name__
            yield from ()

        def closed(self, reason: str) -> None:
            stats = self.crawler.stats
            if stats is not None:
                lag["exceptions"] = stats.get_value("downloader/exception_count", 0)
            engine = self.crawler.engine
            assert engine is not None
            for middleware in engine.downloader.middleware.middlewares:
                if isinstance(middleware, RobotGateMiddleware):
                    fleet = middleware.gate._servers.fleet
                    lag["late"] = fleet.late if fleet is not None else -1

    settings = {
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "RETRY_ENABLED": False,
        "USER_AGENT": "LastLookBot/1.0 (+https://example.com/bot)",
        "DOWNLOADER_MIDDLEWARES": MIDDLEWARES,
        **config.get("settings", {}),
    }
    process = CrawlerProcess(settings=settings)
    process.crawl(Pages)
    process.start()
    print(json.dumps({"statuses": statuses, "grants": grants, "late": lag["late"],
                      "lagged": lag["done"], "exceptions": lag["exceptions"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
