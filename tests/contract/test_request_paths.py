"""One contract, every client path: ``gate.fetch``, ``gate.middleware``, the httpx
transport, the Scrapy middleware and ``gate.crawl`` keep the same promises.

Each case runs through a driver per path with one small interface: a run of
URLs (one after the other, or all at once) gives one :class:`Result` each (a
status, or robotgate's refusal with its decision).  The servers are on
loopback; the gate's ``is_private`` rule lets 127.0.0.1 play a public site and
127.0.0.2 a private network.  The Scrapy driver runs Scrapy in a subprocess
(tests/contract/scrapy_paths_runner.py); a case it cannot run says why.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, GateClosed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.policy.hops import REFUSED

httpx = pytest.importorskip("httpx", reason="pip install 'robotgate[httpx]'")
# Scrapy's cases skip without it (tests/conftest.py); the other clients' still run.

from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROOT = Path(__file__).resolve().parents[2]
PUBLIC, PRIVATE = "127.0.0.1", "127.0.0.2"
ROBOTS = "User-agent: *\nDisallow: /no/\nContent-Usage: / train-ai=n\n"


def public_loopback_1(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The tests' ``is_private``: 127.0.0.1 plays a public site, every other address is
    private.  (Scrapy's driver names it as ``ROBOTGATE_IS_PRIVATE``.)"""
    return str(address) != PUBLIC


# -- the servers -------------------------------------------------------------------------


@dataclass
class Site:
    """A loopback server that records when each request arrived and how many overlap."""

    host: str
    robots: str = ROBOTS
    arrivals: list[tuple[str, float]] = field(default_factory=list)
    headers: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    robots_hits: int = 0
    active: int = 0
    peak: int = 0
    port: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> Site:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def times(self, prefix: str = "/") -> list[float]:
        return [t for path, t in self.arrivals if path.startswith(prefix)]

    def paths(self) -> list[str]:
        return [path for path, _ in self.arrivals]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            self.robots_hits += 1
            return web.Response(text=self.robots)
        self.arrivals.append((path, time.monotonic()))
        self.headers.append((path, dict(request.headers)))
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            query = request.query
            if "hold" in query:
                await asyncio.sleep(float(query["hold"]))
            if path == "/slow":
                await asyncio.sleep(0.2)
            if path.startswith("/status/"):
                extra = {"Retry-After": query["ra"]} if "ra" in query else {}
                return web.Response(status=int(path.rsplit("/", 1)[1]), headers=extra)
            if path == "/redirect":
                return web.Response(status=302, headers={"Location": query["to"]})
            if path == "/redirect-uri":
                return web.Response(status=302, headers={"URI": query["to"]})
            return web.Response(text="page")
        finally:
            self.active -= 1


@pytest.fixture
async def public() -> AsyncIterator[Site]:
    site = await Site(PUBLIC).start()
    yield site
    await site.close()


@pytest.fixture
async def private() -> AsyncIterator[Site]:
    site = await Site(PRIVATE, robots="User-agent: *\nAllow: /\n").start()
    yield site
    await site.close()


# -- the drivers -------------------------------------------------------------------------


@dataclass
class Result:
    """What one URL came to: a status, or a refusal (``refused``: the decision's outcome,
    ``"rule"`` for a robots.txt rule), or an error."""

    status: int | None = None
    refused: str | None = None
    reason: str = ""
    usage: dict[str, bool] | None = None
    error: str | None = None


def _refusal(no: Disallowed) -> Result:
    return Result(refused=no.decision.outcome or "rule", reason=no.decision.reason)


class Client:
    """A path opened on a gate: ``get`` one URL, ``many`` at once."""

    def __init__(self, gate: RobotGate) -> None:
        self.gate = gate

    async def get(self, url: str) -> Result:
        raise NotImplementedError

    async def many(self, urls: list[str]) -> list[Result]:
        return list(await asyncio.gather(*(self.get(url) for url in urls)))

    async def close(self) -> None:
        pass


class FetchClient(Client):
    async def get(self, url: str) -> Result:
        try:
            resp = await self.gate.fetch(url)
        except Disallowed as no:
            return _refusal(no)
        return Result(status=resp.status, usage=self.gate.usage(url, resp.headers))


class MiddlewareClient(Client):
    def __init__(self, gate: RobotGate) -> None:
        super().__init__(gate)
        self.session = aiohttp.ClientSession(middlewares=(gate.middleware,))

    async def get(self, url: str) -> Result:
        try:
            async with self.session.get(url) as resp:
                await resp.read()
        except Disallowed as no:
            return _refusal(no)
        return Result(status=resp.status, usage=self.gate.usage(url, resp.headers))

    async def close(self) -> None:
        await self.session.close()


class HttpxClient(Client):
    def __init__(self, gate: RobotGate) -> None:
        super().__init__(gate)
        self.client = httpx.AsyncClient(transport=RobotGateTransport(gate),
                                        follow_redirects=True)

    async def get(self, url: str) -> Result:
        try:
            resp = await self.client.get(url)
        except Disallowed as no:
            return _refusal(no)
        except httpx.RemoteProtocolError as exc:  # a Location httpx will not parse
            return Result(error=f"client refused: {exc}")
        return Result(status=resp.status_code, usage=self.gate.usage(url, resp.headers))

    async def close(self) -> None:
        await self.client.aclose()


class CrawlClient(Client):
    async def get(self, url: str) -> Result:
        return (await self.many([url]))[0]

    async def many(self, urls: list[str]) -> list[Result]:
        found: dict[str, CrawlResult] = {}

        async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
            return ()

        # One request a URL, as every other path sends: the crawl's retries stay off here.
        await self.gate.crawl(urls, handler, concurrency=len(urls), retries=0,
                              on_result=lambda r: found.__setitem__(r.url, r))
        results = []
        for url in urls:
            record = found[url]
            if record.decision is not None:
                results.append(Result(refused=record.decision.outcome or "rule",
                                      reason=record.decision.reason))
            elif record.error is not None and record.status is None:
                results.append(Result(error=record.error))
            else:
                results.append(Result(status=record.status, usage=record.usage))
        return results


CLIENTS: dict[str, type[Client]] = {
    "fetch": FetchClient, "middleware": MiddlewareClient, "httpx": HttpxClient,
    "crawl": CrawlClient,
}
#: RobotGate keyword -> the Scrapy setting that gives it.
SETTINGS = {"delay": "ROBOTGATE_DELAY", "max_per_host": "ROBOTGATE_MAX_PER_HOST",
            "latency_factor": "ROBOTGATE_LATENCY_FACTOR"}


@dataclass
class Driver:
    """One client path.  ``run`` is what every case can use; ``open`` (in-process
    paths only) gives the gate too."""

    name: str

    @property
    def in_process(self) -> bool:
        return self.name != "scrapy"

    @asynccontextmanager
    async def open(self, **options: Any) -> AsyncIterator[Client]:
        async with RobotGate(AGENT, is_private=public_loopback_1, **options) as gate:
            client = CLIENTS[self.name](gate)
            try:
                yield client
            finally:
                await client.close()

    async def run(self, urls: list[str], sequential: bool = True,
                  **options: Any) -> list[Result]:
        if not self.in_process:
            return await self._scrapy(urls, sequential, options)
        async with self.open(**options) as client:
            if not sequential:
                return await client.many(urls)
            return [await client.get(url) for url in urls]

    async def _scrapy(self, urls: list[str], sequential: bool,
                      options: dict[str, Any]) -> list[Result]:
        settings: dict[str, Any] = {
            "ROBOTGATE_IS_PRIVATE": f"{__name__}.public_loopback_1",
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "DOWNLOAD_DELAY": 0}
        for name, value in options.items():
            settings[SETTINGS[name]] = value
        config = json.dumps({"urls": urls, "sequential": sequential, "settings": settings})
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.contract.scrapy_paths_runner", config, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()[-3000:]
        lines = out.decode().strip().splitlines()
        assert lines, err.decode()[-3000:]
        return [Result(**entry) if entry is not None else Result(error="no answer")
                for entry in json.loads(lines[-1])]


@pytest.fixture(params=["fetch", "middleware", "httpx", "scrapy", "crawl"])
def driver(request: pytest.FixtureRequest) -> Driver:
    return Driver(request.param)


def _in_process_only(driver: Driver, why: str) -> None:
    if not driver.in_process:
        pytest.skip(f"Scrapy: {why}")


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(sorted(times))]


# -- the cases ---------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_disallowed_url_is_refused_and_an_allowed_page_reports_its_usage(
        driver: Driver, public: Site) -> None:
    refused, page = await driver.run([public.url("/no/x"), public.url("/page/1")], delay=0)
    assert refused.refused == "rule", refused
    assert "Disallow: /no/" in refused.reason
    # robots.txt's Content-Usage rules, as every path reports them with the page.
    assert page.status == 200 and page.usage == {"train-ai": False}, page
    assert public.paths() == ["/page/1"]


@pytest.mark.slow
async def test_robots_txt_is_fetched_once_for_concurrent_requests(driver: Driver,
                                                                 public: Site) -> None:
    urls = [public.url(f"/page/{i}") for i in range(6)]
    results = await driver.run(urls, sequential=False, delay=0, max_per_host=6)
    assert [r.status for r in results] == [200] * 6, results
    assert public.robots_hits == 1


@pytest.mark.slow
async def test_the_delay_is_kept_between_requests(driver: Driver, public: Site) -> None:
    urls = [public.url(f"/page/{i}") for i in range(3)]
    results = await driver.run(urls, sequential=False, delay=0.2)
    assert [r.status for r in results] == [200] * 3, results
    assert min(_gaps(public.times("/page/"))) >= 0.19


@pytest.mark.slow
async def test_retry_after_is_kept(driver: Driver, public: Site) -> None:
    urls = [public.url("/status/503?ra=1"), public.url("/page/1")]
    results = await driver.run(urls, delay=0)
    assert [r.status for r in results] == [503, 200], results
    assert _gaps(public.times())[0] >= 0.95


@pytest.mark.slow
async def test_a_429_without_retry_after_backs_off(driver: Driver, public: Site) -> None:
    urls = [public.url("/status/429"), public.url("/page/1")]
    results = await driver.run(urls, delay=0.1)
    assert [r.status for r in results] == [429, 200], results
    assert _gaps(public.times())[0] >= 0.45  # twice the gap, at least backoff_base (0.5 s)


@pytest.mark.slow
async def test_latency_factor_widens_the_gap_after_a_slow_answer(driver: Driver,
                                                                 public: Site) -> None:
    # The answer takes 0.2 s; five times that is the least gap to the next request.
    urls = [public.url("/slow"), public.url("/page/1")]
    results = await driver.run(urls, delay=0, latency_factor=5)
    assert [r.status for r in results] == [200, 200], results
    assert _gaps(public.times())[0] >= 0.9


@pytest.mark.slow
async def test_max_per_host_caps_the_requests_the_server_sees_at_once(
        driver: Driver, public: Site) -> None:
    urls = [public.url(f"/page/{i}?hold=0.15") for i in range(6)]
    results = await driver.run(urls, sequential=False, delay=0, max_per_host=2)
    assert [r.status for r in results] == [200] * 6, results
    assert 1 <= public.peak <= 2


# Spellings of the private target 127.0.0.2 a Location may use; each is refused.
SPELLINGS = [
    "http://user:secret@127.0.0.2:{port}/secret#x",  # a fragment and credentials
    "http://2130706434:{port}/secret",                # decimal
    "http://0x7f.0.0.2:{port}/secret",                # hex
    "http://0177.0.0.02:{port}/secret",               # octal
    "http://127.0.0.2.:{port}/secret",                # a trailing dot
    "http://[::ffff:127.0.0.2]:{port}/secret",        # IPv4-mapped IPv6
    "http://no-such-host.invalid:{port}/secret",      # a look-up that fails
]


@pytest.mark.slow
async def test_a_redirect_into_a_private_address_is_refused(
        driver: Driver, public: Site, private: Site) -> None:
    urls = [public.url("/redirect?to=" + quote(target.format(port=private.port), safe=""))
            for target in SPELLINGS]
    # A URI header: aiohttp follows it when Location is absent (the others do not).
    urls.append(public.url("/redirect-uri?to=" + quote(private.url("/secret"), safe="")))
    results = await driver.run(urls, sequential=False, delay=0, max_per_host=8)
    *located, uri = results
    for target, result in zip(SPELLINGS, located, strict=True):
        # httpx will not parse a Location with an octal IPv4 host: it follows nothing.
        refused_by_client = (result.error or "").startswith("client refused")
        assert result.refused == REFUSED or refused_by_client, (target, result)
    assert uri.refused == REFUSED or uri.status == 302, uri
    assert private.paths() == [] and private.robots_hits == 0


@pytest.mark.slow
async def test_private_to_private_is_followed_without_the_locations_credentials(
        driver: Driver, private: Site) -> None:
    # The first request is never refused for its address; a private site may send the
    # crawler to another private address; credentials in a Location are never sent.
    target = quote(f"http://user:secret@{PRIVATE}:{private.port}/secret", safe="")
    [result] = await driver.run([private.url("/redirect?to=" + target)], delay=0)
    assert result.status == 200, result
    assert private.paths() == ["/redirect", "/secret"]
    assert all("Authorization" not in headers for _, headers in private.headers)


def slow_next_reserve(store: Any) -> Callable[[], None]:
    """Wrap ``store.reserve``; the function returned makes the next slot come back late:
    the loop is past the slot's deadline by the time the request could leave."""
    reserve = store.reserve
    armed: list[bool] = []

    async def late(key: str, interval: float, slack: float = 0.0) -> float | None:
        wait: float | None = await reserve(key, interval, slack)
        if armed:
            armed.clear()
            time.sleep(0.1)  # the loop itself runs late: nothing else moves meanwhile
        return wait

    store.reserve = late
    return lambda: armed.append(True)


@pytest.mark.slow
async def test_a_late_fleet_slot_is_given_up_and_asked_again(
        driver: Driver, public: Site, redis_url: str, prefix: str) -> None:
    _in_process_only(driver, "its store comes from settings in another process, where no "
                     "slow store can be slipped in; its path is RequestTurn.leaving, the one "
                     "the httpx case runs")
    from robotgate import RedisStore

    store = RedisStore(redis_url, prefix=prefix)
    arm = slow_next_reserve(store)
    async with driver.open(delay=0.2, store=store) as client:
        first = await client.get(public.url("/page/1"))  # robots.txt's slot came before
        arm()
        second = await client.get(public.url("/page/2"))
        fleet = client.gate._servers.fleet
        assert fleet is not None
        late = fleet.late
    assert first.status == 200 and second.status == 200, (first, second)
    assert late >= 1
    assert public.paths() == ["/page/1", "/page/2"]


async def test_each_request_gives_its_servers_slot_back_exactly_once(
        driver: Driver, public: Site, private: Site) -> None:
    _in_process_only(driver, "the gate's scheduler is in another process")
    refused_hop = public.url("/redirect?to=" + quote(private.url("/secret"), safe=""))
    urls = [public.url("/page/1"), public.url("/no/x"), public.url("/status/503"),
            public.url("/status/429?ra=0"), public.url("/status/404"), refused_hop,
            public.url("/page/2")]
    async with driver.open(delay=0, max_per_host=3, max_concurrency=5) as client:
        results = await client.many(urls)
        scheduler = client.gate._scheduler
        group = scheduler.get(client.gate.pace_key(public.url("/")))
        assert group is not None
        # Released once each: none still held, none given back twice (free would pass size).
        assert (group.free, group.size, group.active) == (3, 3, 0), results
        slots = scheduler.global_slots
        assert slots is not None and slots.free == slots.size == 5
    assert results[1].refused == "rule" and results[5].refused == REFUSED, results


@pytest.mark.slow
async def test_close_ends_a_request_waiting_for_its_turn_promptly(driver: Driver,
                                                                 public: Site) -> None:
    _in_process_only(driver, "the gate closes with the spider; Scrapy's own shutdown "
                     "governs what is in flight")
    # robots.txt is a request to the server too: the page waits 30 s after it.
    async with driver.open(delay=30) as client:
        waiting = asyncio.ensure_future(client.get(public.url("/page/1")))
        for _ in range(200):  # robots.txt asked (however slowly under load), then a wait
            if public.robots_hits:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        assert public.robots_hits == 1
        assert not waiting.done()
        started = time.monotonic()
        await client.gate.close()
        # Promptly: long before the 30 s its turn was due (how soon, load decides).
        done, _ = await asyncio.wait([waiting], timeout=10)
        assert done, "the waiting request did not end"
        assert time.monotonic() - started < 10
    try:
        outcome: Any = waiting.result()
    except GateClosed as exc:
        outcome = exc
    assert isinstance(outcome, GateClosed) or (
        isinstance(outcome, Result) and outcome.status is None), outcome
    assert public.paths() == []
