"""The alternatives a user would pick instead of robotgate, for ``benchmarks/promises.py``
and ``benchmarks/overhead.py``.

* :class:`HandRolled`: aiohttp + Protego + an ``asyncio.Lock`` per host (one
  robots.txt fetch per host) + an ``aiolimiter.AsyncLimiter`` per host (the
  delay), written the way a competent user who has read RFC 9309 would.
  It runs in the benchmark's own process, driven like the gate.
* Scrapy (``ROBOTSTXT_OBEY``) and crawlee (``respect_robots_txt_file``), from
  the optional extra ``bench``: each runs in a child process of its own,
  reading a crawl spec and writing the outcome of every URL::

      python benchmarks/baselines.py scrapy SPEC.json OUT.json
      python benchmarks/baselines.py crawlee SPEC.json OUT.json

  SPEC holds ``urls``, ``user_agent``, ``delay``, ``per_origin``,
  ``concurrency``, ``timeout`` and ``deadline`` (seconds: past it the child
  writes what it has and exits with status 4); OUT holds ``outcomes`` (URL to
  ``"fetched"``, ``"disallowed"`` or ``"error: ..."``), ``first``/``last``
  (monotonic times of the first request and the last answer), ``finished``
  and ``version``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
from aiolimiter import AsyncLimiter
from yarl import URL

if TYPE_CHECKING:
    from protego import Protego

__all__ = [
    "HandRolled",
    "RobotsDenied",
    "alternative_available",
    "run_crawlee",
    "run_scrapy",
]

_ALLOW_ALL = "User-agent: *\nAllow: /\n"
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


class RobotsDenied(Exception):
    """robots.txt forbids the URL (the hand-rolled crawler's ``Disallowed``)."""


class HandRolled:
    """A careful crawler without robotgate: what a competent user writes by hand.

    * robots.txt: fetched once per host under that host's ``asyncio.Lock``
      (double-checked cache), parsed by Protego; 2xx gives rules, 4xx allows
      all, 429/5xx/network errors/timeouts disallow all, too many redirects
      allow all (RFC 9309 2.3.1);
    * pacing: one ``AsyncLimiter(1, interval)`` per host, ``interval`` being
      ``delay`` raised to robots.txt's Crawl-delay, plus an
      ``asyncio.Semaphore(per_origin)`` per host for requests in flight.

    The session is the caller's; nothing is cached across runs.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        user_agent: str,
        *,
        delay: float,
        per_origin: int = 1,
        timeout: float = 30.0,
    ) -> None:
        from protego import Protego  # the extra 'bench' (or 'test')

        self._parse = Protego.parse
        self.session = session
        self.user_agent = user_agent
        self.delay = delay
        self.per_origin = per_origin
        self.timeout = timeout
        self.robots_requests = 0
        self._robots: dict[str, Protego] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._limiters: dict[str, AsyncLimiter | None] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}

    async def fetch(self, url: str) -> int:
        """Fetch ``url`` and read its body; returns the status or raises :class:`RobotsDenied`."""
        parsed = URL(url)
        origin = f"{parsed.scheme}://{parsed.host}:{parsed.port}"
        rules = await self._rules(origin)
        if not rules.can_fetch(url, self.user_agent):
            raise RobotsDenied(url)
        slot = self._slots.get(origin)
        if slot is None:
            slot = self._slots[origin] = asyncio.Semaphore(self.per_origin)
        async with slot:
            limiter = self._limiters[origin]
            if limiter is not None:
                await limiter.acquire()
            async with self.session.get(url, headers={"User-Agent": self.user_agent}) as resp:
                await resp.read()
                return resp.status

    async def _rules(self, origin: str) -> Protego:
        rules = self._robots.get(origin)
        if rules is not None:
            return rules
        lock = self._locks.get(origin)
        if lock is None:
            lock = self._locks[origin] = asyncio.Lock()
        async with lock:
            rules = self._robots.get(origin)
            if rules is None:
                rules = await self._fetch_rules(origin)
                crawl_delay = rules.crawl_delay(self.user_agent)
                interval = max(self.delay, float(crawl_delay or 0.0))
                self._limiters[origin] = AsyncLimiter(1, interval) if interval > 0 else None
                self._robots[origin] = rules
        return rules

    async def _fetch_rules(self, origin: str) -> Protego:
        self.robots_requests += 1
        try:
            return await asyncio.wait_for(self._get_rules(origin), self.timeout)
        except aiohttp.TooManyRedirects:
            return self._parse(_ALLOW_ALL)
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError):
            return self._parse(_DISALLOW_ALL)

    async def _get_rules(self, origin: str) -> Protego:
        async with self.session.get(
            origin + "/robots.txt", headers={"User-Agent": self.user_agent}, max_redirects=5
        ) as resp:
            if 200 <= resp.status < 300:
                body = await resp.read()
                return self._parse(body[: 500 * 1024].decode("utf-8", "replace"))
            if 400 <= resp.status < 500 and resp.status != 429:
                return self._parse(_ALLOW_ALL)
            return self._parse(_DISALLOW_ALL)


# -- the optional alternatives, each in a child process ------------------------


def alternative_available(name: str) -> tuple[bool, str]:
    """Whether ``scrapy``/``crawlee`` can be imported here, and its version or why not."""
    if importlib.util.find_spec(name) is None:
        return False, f"not installed (pip install {name}, or the extra 'bench')"
    try:
        return True, metadata.version(name)
    except metadata.PackageNotFoundError:
        return True, "unknown version"


def _record(outcomes: dict[str, str], url: str, outcome: str, times: dict[str, float]) -> None:
    outcomes[url] = outcome
    times["last"] = time.monotonic()


def run_scrapy(spec: dict[str, Any]) -> dict[str, Any]:
    """Crawl ``spec["urls"]`` with Scrapy, ``ROBOTSTXT_OBEY = True``; outcomes per URL."""
    from scrapy import Request, Spider
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import Response

    urls: list[str] = spec["urls"]
    outcomes: dict[str, str] = _PARTIAL.setdefault("outcomes", {})
    times: dict[str, float] = _PARTIAL.setdefault("times", {})

    class BenchSpider(Spider):
        name = "bench"

        async def start(self) -> Any:
            times["first"] = time.monotonic()
            for url in urls:
                yield Request(url, callback=self.page, errback=self.failed, dont_filter=True,
                              cb_kwargs={"url": url})

        def page(self, response: Response, url: str) -> None:
            outcome = "fetched" if response.status == 200 else f"status {response.status}"
            _record(outcomes, url, outcome, times)

        def failed(self, failure: Any) -> None:  # a twisted Failure, with .request
            url = failure.request.cb_kwargs["url"]
            if isinstance(failure.value, IgnoreRequest):
                _record(outcomes, url, "disallowed", times)
            else:
                _record(outcomes, url, f"error: {type(failure.value).__name__}", times)

    settings = {
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": spec["user_agent"],
        "DOWNLOAD_DELAY": spec["delay"],
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS": spec["concurrency"],
        "CONCURRENT_REQUESTS_PER_DOMAIN": spec["per_origin"],
        "DOWNLOAD_TIMEOUT": spec["timeout"],
        "AUTOTHROTTLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "COOKIES_ENABLED": False,  # also keeps tldextract from looking up its suffix list
        "TELNETCONSOLE_ENABLED": False,
        "HTTPERROR_ALLOW_ALL": True,
        "LOG_LEVEL": "ERROR",
    }
    process = CrawlerProcess(settings=settings)
    process.crawl(BenchSpider)
    process.start()
    return {"outcomes": outcomes, "times": times}


def run_crawlee(spec: dict[str, Any]) -> dict[str, Any]:
    """Crawl ``spec["urls"]`` with crawlee's HttpCrawler, ``respect_robots_txt_file=True``.

    crawlee has no per-host delay setting: its ``ThrottlingRequestManager``
    paces a domain by robots.txt's Crawl-delay (or 429s), and a Crawl-delay
    set first is kept; the configured delay is set on every host that way.
    """
    return asyncio.run(_crawlee(spec))


async def _crawlee(spec: dict[str, Any]) -> dict[str, Any]:
    from crawlee import ConcurrencySettings
    from crawlee.crawlers import BasicCrawlingContext, HttpCrawler, HttpCrawlingContext
    from crawlee.http_clients import ImpitHttpClient
    from crawlee.request_loaders import ThrottlingRequestManager
    from crawlee.storage_clients import MemoryStorageClient
    from crawlee.storages import RequestQueue

    for name in ("crawlee", "httpx", "impit"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    urls: list[str] = spec["urls"]
    outcomes: dict[str, str] = _PARTIAL.setdefault("outcomes", {})
    times: dict[str, float] = _PARTIAL.setdefault("times", {})
    storage = MemoryStorageClient()
    queue = await RequestQueue.open(storage_client=storage)
    first_of_host: dict[str, str] = {}
    for url in urls:
        first_of_host.setdefault(URL(url).host or "", url)
    manager = ThrottlingRequestManager(
        queue, domains=list(first_of_host), request_manager_opener=RequestQueue.open
    )
    if spec["delay"] > 0:
        for url in first_of_host.values():
            manager.set_crawl_delay(url, spec["delay"])
    n = max(1, min(spec["concurrency"], len(first_of_host) * spec["per_origin"]))
    crawler = HttpCrawler(
        request_manager=manager,
        storage_client=storage,
        http_client=ImpitHttpClient(
            browser=None, timeout=spec["timeout"], headers={"User-Agent": spec["user_agent"]}
        ),
        respect_robots_txt_file=True,
        max_request_retries=0,
        use_session_pool=False,
        retry_on_blocked=False,
        configure_logging=False,
        concurrency_settings=ConcurrencySettings(
            min_concurrency=n, max_concurrency=n, desired_concurrency=n
        ),
    )

    @crawler.router.default_handler
    async def page(context: HttpCrawlingContext) -> None:
        status = context.http_response.status_code
        _record(outcomes, context.request.url, "fetched" if status == 200 else f"status {status}",
                times)

    @crawler.failed_request_handler
    async def failed(context: BasicCrawlingContext, error: Exception) -> None:
        _record(outcomes, context.request.url, f"error: {type(error).__name__}", times)

    @crawler.on_skipped_request
    async def skipped(url: str, reason: str) -> None:
        _record(outcomes, url, "disallowed" if reason == "robots_txt" else f"skipped: {reason}",
                times)

    times["first"] = time.monotonic()
    await crawler.run(urls)
    return {"outcomes": outcomes, "times": times}


_PARTIAL: dict[str, Any] = {}
_RUNNERS = {"scrapy": run_scrapy, "crawlee": run_crawlee}


def main(argv: Sequence[str] | None = None) -> int:
    """``baselines.py scrapy|crawlee SPEC.json OUT.json``: crawl and write the outcomes."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3 or args[0] not in _RUNNERS:
        print(__doc__, file=sys.stderr)
        return 2
    name, spec_path, out_path = args
    spec = json.loads(Path(spec_path).read_text())
    ok, version = alternative_available(name)
    if not ok:
        Path(out_path).write_text(json.dumps({"error": version}))
        return 3
    # The runners fill _PARTIAL as they go, so a crawl cut off at the deadline
    # still reports what it answered.
    _PARTIAL["version"] = version
    watchdog = threading.Timer(float(spec.get("deadline", 600)), _give_up, (out_path,))
    watchdog.daemon = True
    watchdog.start()
    result = _RUNNERS[name](spec)
    watchdog.cancel()
    result.update(version=version, finished=True)
    Path(out_path).write_text(json.dumps(result))
    return 0


def _give_up(out_path: str) -> None:
    for _ in range(5):
        try:
            snapshot = {k: (dict(v) if isinstance(v, dict) else v) for k, v in _PARTIAL.items()}
            break
        except RuntimeError:  # changed size during iteration: the crawl is still running
            time.sleep(0.01)
    else:
        snapshot = {"version": _PARTIAL.get("version")}
    snapshot["finished"] = False
    Path(out_path).write_text(json.dumps(snapshot))
    os._exit(4)


if __name__ == "__main__":
    sys.exit(main())
