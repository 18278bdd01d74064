"""A canary secret never leaves robotgate in what it *says*, on any client path, through
any output; every URL comes back whole in what it *returns* (docs/secrets.md).

The secrets: a unique password and token in page URLs, in the URL of a proxy
(``http://user:PASSWORD@127.0.0.1:port``, one answering 400, one answering 407, one
refusing connections), in a redirect's target, and in request headers
(``Authorization``: Bearer or Digest ``response="..."``, ``Cookie`` with a quoted value,
``Proxy-Authorization``, ``X-Api-Key``, ``X-Auth-Token``); a fragment
(``#access_token=...&token_type=bearer``); short values under ``?authorization=``,
``?privatekey=``, ``?hash=``, ``?hmac=``, ``?bearer=``, ``?k=``; the site's
``Set-Cookie: sid="..."``; and a canary made at random for each run
(:class:`RandomCanary`: a random name and a random value format in each place, a
header, a query, a fragment, a cookie, a quoted cookie, Digest, user information;
``ROBOTGATE_CANARY_SEED`` replays a run, and a failure names its seed).  The outputs
swept: each exception's str and repr, each decision's reason and error, every record
of every ``robotgate`` logger at DEBUG (message and traceback), every event, the
metrics' data points, and the CLI's stdout, stderr, HTML report and the texts of its
JSON lines.  The paths: ``gate.fetch``, ``gate.middleware``, the httpx transport,
``gate.crawl``, crawlee's client, Scrapy's middleware (a child process: its robotgate
log lines and results), a Playwright context and crawl4ai's crawler (in the system
Chromium; skipped without one), and the CLI.  What is returned: ``gate.crawl``'s
``CrawlResult.url`` and ``final_url``, and ``robotgate fetch``'s ``url`` and
``final_url``, each the URL given or the redirect's target, whole.

Then a proxy's answer is not the site's: robots.txt asked through a proxy answering
407 is unreachable, so ``/no/`` (disallowed by the real robots.txt) is never asked
for, on every path that takes a proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import re
import string
import sys
import uuid
from base64 import b64encode
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.events import Event
from tests.contract.test_request_paths import AGENT, PUBLIC, ROOT, public_loopback_1
from tests.support.canary_site import CanarySite
from tests.support.proxies import FailingProxy, closed_port

httpx = pytest.importorskip("httpx")
pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")
from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

pytestmark = pytest.mark.slow  # loopback servers, child processes, browsers

PASSWORD = "CanaryPw-88c4f1"
TOKEN = "CanaryTok-88c4f1"
QUOTED = "CanaryQuo-88c4f1"  # a cookie's quoted value
DIGEST = "CanaryDig-88c4f1"  # Digest Authorization's response
API_KEY, AUTH_TOKEN = "CanaryKey-88c4f1", "CanaryAuth-88c4f1"
FRAGMENT = "CanaryFrag-88c4f1"  # #access_token=...
SESSION = "CanarySes-88c4f1"  # a redirect's target's query: /landed?session=...
SET_COOKIE = "CanarySet-88c4f1"  # the site's Set-Cookie: sid="..."
#: Short values under parameters no list of names foresaw.
SHORT = {"authorization": "q7Zk", "privatekey": "w3Xp", "hash": "j5Vb", "hmac": "t2Hd",
         "bearer": "m8Rc", "k": "y4Ln"}
BASIC = b64encode(f"user:{PASSWORD}".encode()).decode()
#: What must never show: the secrets, and the Basic credentials made of them.
FIXED = (PASSWORD, TOKEN, QUOTED, DIGEST, API_KEY, AUTH_TOKEN, FRAGMENT, SESSION,
         SET_COOKIE, BASIC, *SHORT.values())
ROBOTS = "User-agent: *\nDisallow: /no/\n"
#: A Location that is not http(s), its password and token the canaries.
FTP_LOCATION = f"ftp://user:{PASSWORD}@{'127.0.0.1'}/file?token={TOKEN}"


def _word(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(low, high)))


def _random_name(rng: random.Random, header: bool) -> str:
    """A name as a header or a parameter may be written: ``X-Qbz-Trk``, ``qbz-trk``,
    ``Qbztrk``, ``qbz_trk``..."""
    words = [_word(rng, 3, 8) for _ in range(rng.randint(1, 3))]
    if header:
        style = rng.choice(["Title", "lower", "X-Title"])
        if style == "lower":
            return "-".join(words)
        name = "-".join(w.capitalize() for w in words)
        return "X-" + name if style == "X-Title" else name
    return rng.choice(["_", "-", ""]).join(words) if len(words) > 1 else words[0]


def _random_value(rng: random.Random) -> str:
    """A secret in one of the formats secrets come in, unique enough to be looked for:
    hex, base64url, a UUID, digits, a JWT's three parts, words, a prefixed token."""
    kind = rng.choice(["hex", "b64", "uuid", "digits", "jwt", "words", "prefixed"])
    if kind == "hex":
        return "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(10, 40)))
    b64 = string.ascii_letters + string.digits + "-_"
    if kind == "b64":
        return "".join(rng.choice(b64) for _ in range(rng.randint(10, 43)))
    if kind == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if kind == "digits":
        return str(rng.randint(10**11, 10**16))
    if kind == "jwt":
        return ".".join("".join(rng.choice(b64) for _ in range(rng.randint(8, 20)))
                        for _ in range(3))
    if kind == "words":
        return "-".join(_word(rng, 4, 9) for _ in range(3))
    return rng.choice(["ghp_", "sk-", "xoxb-", "AKIA"]) + "".join(
        rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(12, 30)))


@dataclass(frozen=True)
class RandomCanary:
    """A random name and a random value in each place a secret goes; ``seed`` makes it
    again (``ROBOTGATE_CANARY_SEED=seed``)."""

    seed: int
    header: tuple[str, str]
    query: tuple[str, str]
    fragment: tuple[str, str]
    cookie: tuple[str, str]
    quoted: tuple[str, str]
    digest: str
    userinfo: tuple[str, str]

    @classmethod
    def make(cls, seed: int) -> RandomCanary:
        rng = random.Random(seed)

        def pair(header: bool = False) -> tuple[str, str]:
            return _random_name(rng, header), _random_value(rng)

        return cls(seed, pair(True), pair(), pair(), pair(), pair(), _random_value(rng),
                   (_word(rng, 3, 9), _random_value(rng)))

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.header[1], self.query[1], self.fragment[1], self.cookie[1],
                self.quoted[1], self.digest, self.userinfo[1])

    @property
    def headers(self) -> dict[str, str]:
        return {self.header[0]: self.header[1],
                "Cookie": f'{self.cookie[0]}={self.cookie[1]}; {self.quoted[0]}="{self.quoted[1]}"',
                "Authorization": f'Digest username="user", realm="canary", '
                                 f'uri="/", response="{self.digest}"'}

    def url_tail(self) -> str:
        return f"?{self.query[0]}={self.query[1]}#{self.fragment[0]}={self.fragment[1]}"


def run_seed() -> int:
    """This run's seed: ``ROBOTGATE_CANARY_SEED`` if set (to replay a failure), else drawn."""
    given = os.environ.get("ROBOTGATE_CANARY_SEED", "")
    return int(given) if given else random.SystemRandom().randrange(2**32)


SEED = run_seed()
CANARY = RandomCanary.make(SEED)
SECRETS = (*FIXED, *CANARY.secrets)
REPLAY = f"replay with ROBOTGATE_CANARY_SEED={SEED}"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Cookie": f'sid="{QUOTED}"; a={PASSWORD}',
           "Proxy-Authorization": f"Basic {BASIC}", "X-Api-Key": API_KEY,
           "X-Auth-Token": AUTH_TOKEN}


def headers_for(url: str, proxy: str | None, canary: RandomCanary = CANARY) -> dict[str, str]:
    """The secret headers a request can carry (the random canary's too; Digest
    Authorization for a URL with a query, Bearer for the others): aiohttp refuses an
    Authorization header beside a URL's credentials (a redirect's target's too), and a
    Proxy-Authorization beside a proxy's."""
    headers = {**HEADERS, **canary.headers}
    headers["Cookie"] = f"{HEADERS['Cookie']}; {canary.headers['Cookie']}"
    headers["Authorization"] = (f'Digest username="user", realm="r", nonce="n", uri="/", '
                                f'response="{DIGEST}"' if "?" in url else HEADERS["Authorization"])
    return {name: value for name, value in headers.items()
            if not (name == "Authorization" and ("@" in url or "/redirect/" in url))
            and not (name == "Proxy-Authorization" and proxy is not None)}


# -- the servers ---------------------------------------------------------------------------


@dataclass
class Site(CanarySite):
    """robots.txt disallowing /no/; /redirect/N answers 302 to ``targets[N]`` (so that
    only the answer holds the target); else a page."""

    targets: list[str] = field(default_factory=list)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if request.path.startswith("/redirect/"):
            target = self.targets[int(request.path.rsplit("/", 1)[1])]
            return web.Response(status=302, headers={"Location": target})
        if request.path == "/loop":  # redirected to itself for good, the query kept
            return web.Response(status=302, headers={"Location": request.path_qs})
        if request.path == "/to-ftp":
            return web.Response(status=302, headers={"Location": FTP_LOCATION})
        response = web.Response(text="<html><body>a page</body></html>",
                                content_type="text/html")
        response.headers["Set-Cookie"] = f'sid="{SET_COOKIE}"; Path=/; HttpOnly'
        return response


def canary_proxy(status: int) -> FailingProxy:
    """A loopback proxy answering ``status``, its URL with the canary password."""
    return FailingProxy(status, PUBLIC, PASSWORD)


def refusing_port() -> int:
    return closed_port(PUBLIC)


@dataclass
class World:
    """The site, the proxies and the URLs a path is asked for."""

    site: Site
    proxies: dict[str, FailingProxy]
    dead: str  # a proxy URL with the password, on a port refusing connections
    canary: RandomCanary = CANARY

    def pages(self) -> list[str]:
        """URLs holding the secrets, direct: a page, a disallowed page, a redirect whose
        target (holding the password) is disallowed, one allowed, a page of a port
        refusing connections (robots.txt unreachable, the client's error said), and the
        token in a query: a disallowed page's, an allowed page's, a redirect target's; a
        redirect to ``/landed?session=...``; short values under parameters; a token in
        a fragment; two pages told apart by their ids; the random canary's query,
        fragment and user information."""
        site, canary = self.site, self.canary
        user, password = canary.userinfo
        site.targets = [site.url("/no/hop", f"user:{PASSWORD}@"),
                        site.url("/page/2", f"{TOKEN}@"),
                        site.url(f"/no/signed?X-Amz-Signature={TOKEN}&part=1"),
                        site.url(f"/landed?session={SESSION}")]
        dead_site = self.dead + "/page"  # with the password, on the refusing port
        short = "&".join(f"{name}={value}" for name, value in SHORT.items())
        return [site.url("/page/1", f"user:{PASSWORD}@"), site.url("/no/x", f"{TOKEN}@"),
                site.url("/redirect/0"), site.url("/redirect/1"), dead_site,
                site.url(f"/no/q?token={TOKEN}"), site.url(f"/page/3?access_token={TOKEN}"),
                site.url("/redirect/2"), site.url("/redirect/3"),
                site.url(f"/page/4?{short}"), site.url(f"/no/s?{short}"),
                site.url(f"/page/5#access_token={FRAGMENT}&token_type=bearer"),
                site.url(f"/page/8?id={uuid.UUID(int=SEED, version=4)}"),
                site.url(f"/page/9?id={uuid.UUID(int=SEED + 1, version=4)}"),
                site.url("/page/6" + canary.url_tail()), site.url("/no/r" + canary.url_tail()),
                site.url("/page/7", f"{user}:{password}@")]

    def final_hop(self, url: str) -> str:
        """Where ``url`` ends: its redirect's target, or itself."""
        site = self.site
        for n, target in enumerate(site.targets):
            if url == site.url(f"/redirect/{n}"):
                return target
        return url

    def proxied(self) -> list[tuple[str, str]]:
        """(URL, proxy URL): an https origin of its own per proxy, asked through it (the
        proxy fails the CONNECT: robots.txt is unreachable, the error quoting the proxy)."""
        return [(f"https://{PUBLIC}:{1000 + n}/page", url) for n, url in enumerate(
            [*(proxy.url for proxy in self.proxies.values()), self.dead])]


@pytest.fixture
async def world() -> AsyncIterator[World]:
    site = await Site().start()
    proxies = {"400": await canary_proxy(400).start(), "407": await canary_proxy(407).start()}
    yield World(site, proxies, f"http://user:{PASSWORD}@{PUBLIC}:{refusing_port()}")
    for proxy in proxies.values():
        await proxy.close()
    await site.close()


# -- what is swept ---------------------------------------------------------------------------


class Sweep(logging.Handler):
    """Every text that left: log records of every robotgate logger at DEBUG, events,
    exceptions, decisions, results, metrics, output streams."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[tuple[str, str]] = []
        self.events: list[Event] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(("log", self.formatter.format(record)))

    def note(self, surface: str, text: object) -> None:
        self.texts.append((surface, str(text)))

    def failure(self, exc: BaseException) -> None:
        self.note("exception str", str(exc))
        self.note("exception repr", repr(exc))
        decision = getattr(exc, "decision", None)
        if decision is not None:
            self.decision(decision)

    def decision(self, decision: Any) -> None:
        self.note("decision reason", decision.reason)
        self.note("decision error", decision.error)
        self.note("decision", decision)

    def check(self, *surfaces: str, secrets: tuple[str, ...] = SECRETS,
              seed: int = SEED) -> None:
        """No secret anywhere, and each of ``surfaces`` said something (so that the
        sweep could have found one).  A failure names the random canary's seed."""
        for event in self.events:
            self.note("event", repr(event))
        said = {surface for surface, text in self.texts if text and text != "None"}
        assert set(surfaces) <= said, (surfaces, said)
        leaks = [(surface, [secret for secret in secrets if secret in text], text)
                 for surface, text in self.texts if any(secret in text for secret in secrets)]
        assert leaks == [], f"replay with ROBOTGATE_CANARY_SEED={seed}: {leaks}"


@pytest.fixture
def sweep() -> Iterator[Sweep]:
    handler = Sweep()
    root = logging.getLogger("robotgate")
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@asynccontextmanager
async def gate_for(sweep: Sweep, **options: Any) -> AsyncIterator[RobotGate]:
    """A gate whose events and metrics the sweep reads."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from robotgate.metrics import MetricsOptions

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0,
                         on_event=sweep.events.append,
                         metrics=MetricsOptions(provider, server_address=True),
                         **options) as gate:
        yield gate
    data = reader.get_metrics_data()
    sweep.note("metrics", data.to_json() if data is not None else "")
    provider.shutdown()


# -- the in-process paths -----------------------------------------------------------------


async def _fetch(gate: RobotGate, sweep: Sweep, url: str, proxy: str | None) -> None:
    try:
        async with gate.fetch(url, proxy=proxy, headers=headers_for(url, proxy)) as resp:
            await resp.read()
    except (Disallowed, aiohttp.ClientError) as exc:
        sweep.failure(exc)


async def _middleware(session: aiohttp.ClientSession, sweep: Sweep, url: str,
                      proxy: str | None) -> None:
    try:
        async with session.get(url, proxy=proxy, headers=headers_for(url, proxy)) as resp:
            await resp.read()
    except (Disallowed, aiohttp.ClientError) as exc:
        sweep.failure(exc)


async def _httpx(gate: RobotGate, sweep: Sweep, urls: list[str], proxy: str | None) -> None:
    inner = httpx.AsyncHTTPTransport(proxy=proxy)
    async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                 follow_redirects=True) as client:
        for url in urls:
            try:
                await client.get(url, headers=headers_for(url, proxy))
            except (Disallowed, httpx.HTTPError) as exc:
                sweep.failure(exc)


async def _crawlee(gate: RobotGate, sweep: Sweep, world: World) -> None:
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    from crawlee import Request
    from crawlee.proxy_configuration import ProxyInfo

    from robotgate.integrations.crawlee import RobotGateHttpClient

    asks: list[tuple[str, str | None]] = [(url, None) for url in world.pages()]
    asks += world.proxied()
    async with RobotGateHttpClient(gate, on_refused=lambda url, no: sweep.failure(no)) as client:
        for url, proxy in asks:
            info = None
            if proxy is not None:
                port = int(proxy.rsplit(":", 1)[1])
                info = ProxyInfo(url=proxy, scheme="http", hostname=PUBLIC, port=port,
                                 username="user", password=PASSWORD)
            try:
                await client.crawl(Request.from_url(url, headers=headers_for(url, proxy)),
                                   proxy_info=info)
            except Exception as exc:  # crawlee's client's errors, robotgate's refusals
                sweep.failure(exc)


async def _crawl(gate: RobotGate, sweep: Sweep, world: World) -> None:
    results: list[CrawlResult] = []

    async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
        return ()

    pages = world.pages()
    await gate.crawl(pages, handler, retries=0, scope="any", on_result=results.append)
    for result in results:
        sweep.note("result error", result.error)
        if result.decision is not None:
            sweep.decision(result.decision)
    assert_returned_whole(world, [(r.url, r.final_url) for r in results], pages)


def assert_returned_whole(world: World, returned: list[tuple[str, str | None]],
                          pages: list[str]) -> None:
    """What robotgate returned: each URL given, whole, once; each final URL the URL
    itself, whole, or its redirect's target as the server wrote it, but for the user
    information of a target, which the client drops (aiohttp takes it out of the URL)."""
    assert sorted(url for url, _ in returned) == sorted(pages), REPLAY
    for url, final in returned:
        if final is None:
            continue
        hop = world.final_hop(url)
        dropped = {re.sub("//[^/@]*@", "//", hop)} if hop != url else set()
        assert final in {hop, *dropped}, (url, final, REPLAY)
    landed = [final for url, final in returned if url == world.site.url("/redirect/3")]
    assert landed == [world.site.targets[3]], (landed, REPLAY)  # ?session=... whole


@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawlee", "crawl"])
async def test_no_secret_leaves_an_in_process_path(path: str, world: World,
                                                   sweep: Sweep) -> None:
    async with gate_for(sweep) as gate:
        if path == "fetch":
            for url in world.pages():
                await _fetch(gate, sweep, url, None)
            for url, proxy in world.proxied():
                await _fetch(gate, sweep, url, proxy)
        elif path == "middleware":
            async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
                for url in world.pages():
                    await _middleware(session, sweep, url, None)
                for url, proxy in world.proxied():
                    await _middleware(session, sweep, url, proxy)
        elif path == "httpx":
            await _httpx(gate, sweep, world.pages(), None)
            for url, proxy in world.proxied():
                await _httpx(gate, sweep, [url], proxy)
        elif path == "crawlee":
            await _crawlee(gate, sweep, world)
        else:
            await _crawl(gate, sweep, world)
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    surfaces = ["log", "event", "metrics", "decision reason"]
    if path != "crawl":
        surfaces += ["exception str", "exception repr"]
    if path in ("fetch", "middleware", "crawlee"):
        # robots.txt through each proxy was asked, and is unreachable: the error said.
        assert all(proxy.targets for proxy in world.proxies.values()), world.proxies
        surfaces.append("decision error")
    sweep.check(*surfaces)


# -- the adapters' errors that are their clients' too -----------------------------------------
#
# Each error robotgate raises that is also its client's (aiohttp's ClientResponseError
# keeps the request's RequestInfo and history in ``args``, and its repr quotes them) says
# nothing secret in its str, its repr, or its ``args`` (what pickling, a default repr and
# error trackers read).  The request objects the error carries (``request_info``,
# ``history``, httpx's ``request``) are the caller's own request, returned whole, as
# the plain client's errors carry them (docs/secrets.md).

#: robotgate's errors each path must raise for ``error_asks`` (so the sweep saw them).
CLIENT_ERRORS = {
    "fetch": {"AiohttpTooManyRedirects", "AiohttpNonHttpRedirect", "AiohttpInvalidURL",
              "AiohttpDisallowed", "AiohttpProxyFailed"},
    "middleware": {"AiohttpDisallowed", "AiohttpProxyFailed"},
    "httpx": {"HttpxInvalidURL", "HttpxDisallowed", "HttpxProxyFailed"},
    "crawlee": {"TooManyRedirects", "RobotsDisallowed", "ProxyFailed"},  # crawlee's ProxyError
}


def error_asks(world: World) -> list[tuple[str, str | None]]:
    """(URL, proxy): a redirect loop, a redirect to ftp:, a port out of range, a
    disallowed page, each with the password in its userinfo and the token in its query;
    a page of an origin not asked before through the proxy answering 407."""
    site = world.site
    userinfo = f"user:{PASSWORD}@"
    return [(site.url(f"/loop?token={TOKEN}", userinfo), None),
            (site.url(f"/to-ftp?token={TOKEN}", userinfo), None),
            (f"http://{userinfo}{PUBLIC}:99999/x?token={TOKEN}", None),
            (site.url(f"/no/e?token={TOKEN}", userinfo), None),
            (f"http://{PUBLIC}:1/page/e?token={TOKEN}", world.proxies["407"].url)]


def said_by(exc: BaseException) -> list[tuple[str, str]]:
    return [("exception str", str(exc)), ("exception repr", repr(exc)),
            ("exception args", repr(exc.args))]


@pytest.mark.parametrize("path", list(CLIENT_ERRORS))
async def test_no_secret_in_the_client_errors_robotgate_raises(
        path: str, world: World, sweep: Sweep) -> None:
    from robotgate import Error

    raised: list[BaseException] = []
    async with gate_for(sweep) as gate:
        if path == "fetch":
            for url, proxy in error_asks(world):
                try:
                    async with gate.fetch(url, proxy=proxy, max_redirects=3) as resp:
                        await resp.read()
                except Exception as exc:
                    raised.append(exc)
        elif path == "middleware":
            async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session:
                for url, proxy in error_asks(world):
                    try:
                        async with session.get(url, proxy=proxy, max_redirects=3) as resp:
                            await resp.read()
                    except Exception as exc:
                        raised.append(exc)
        elif path == "httpx":
            for url, proxy in error_asks(world):
                inner = httpx.AsyncHTTPTransport(proxy=proxy)
                async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                             follow_redirects=True, max_redirects=3) as client:
                    try:
                        await client.get(url)
                    except Exception as exc:
                        raised.append(exc)
        else:
            pytest.importorskip("crawlee", reason="crawlee is not installed")
            from crawlee import Request
            from crawlee.proxy_configuration import ProxyInfo

            from robotgate.integrations.crawlee import RobotGateHttpClient

            async with RobotGateHttpClient(gate) as client:
                for url, proxy in error_asks(world):
                    info = None if proxy is None else ProxyInfo(
                        url=proxy, scheme="http", hostname=PUBLIC,
                        port=int(proxy.rsplit(":", 1)[1]), username="user", password=PASSWORD)
                    try:
                        await client.crawl(Request.from_url(url), proxy_info=info)
                    except Exception as exc:
                        raised.append(exc)
    ours = [exc for exc in raised if isinstance(exc, Error)]
    kinds = {type(exc).__name__ for exc in ours}
    assert CLIENT_ERRORS[path] <= kinds, ([repr(type(exc)) for exc in raised], kinds)
    for exc in ours:
        sweep.texts += [(f"{surface} ({type(exc).__name__})", text)
                        for surface, text in said_by(exc)]
    sweep.check()


# -- Scrapy, in a child process ------------------------------------------------------------


async def _child(module: str, *argv: str) -> tuple[str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *argv, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)  # hang guard
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    return out.decode(), err.decode()


async def test_no_secret_leaves_scrapy(world: World, sweep: Sweep) -> None:
    asks: list[tuple[str, str | None]] = [(url, None) for url in world.pages()]
    asks += world.proxied()
    config = {"urls": [url for url, _ in asks], "sequential": True, "said": True,
              "meta": [{"proxy": proxy} if proxy else {} for _, proxy in asks],
              "settings": {"ROBOTGATE_IS_PRIVATE":
                           "tests.contract.test_request_paths.public_loopback_1",
                           "ROBOTGATE_DELAY": 0, "LOG_LEVEL": "DEBUG",
                           "DEFAULT_REQUEST_HEADERS": HEADERS}}
    out, err = await _child("tests.contract.scrapy_paths_runner", json.dumps(config))
    results = json.loads(out.strip().splitlines()[-1])
    for result in results:
        if result is not None and "refused" in result:  # robotgate's refusal, not Scrapy's
            sweep.note("decision reason", result["reason"])  # error (its own words)
        for surface, text in zip(("exception str", "exception repr", "exception args"),
                                 (result or {}).get("said", ()), strict=False):
            sweep.note(surface, text)  # robotgate's errors (RobotsDisallowed, ProxyFailed)
    # robotgate's own log lines (Scrapy's are its own: it logs each request's URL).
    sweep.texts += [("log", line) for line in err.splitlines() if "[robotgate" in line]
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    assert all(proxy.targets for proxy in world.proxies.values()), world.proxies
    sweep.check("log", "decision reason", "exception str", "exception repr", "exception args")


# -- the CLI ---------------------------------------------------------------------------------


async def test_no_secret_leaves_the_cli(world: World, sweep: Sweep, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from robotgate.cli import main

    lines, html = tmp_path / "crawl.jsonl", tmp_path / "crawl.html"
    # The CLI runs its own event loop: a thread of its own, the servers on the test's loop.
    code = await asyncio.to_thread(main, ["fetch", "--agent", AGENT, "--store", "memory",
                                          "--delay", "0", "--out", str(lines),
                                          *world.pages()])
    assert code in (0, 1), capsys.readouterr().err
    fetched = capsys.readouterr()
    code = await asyncio.to_thread(main, ["report", str(lines), "--out", str(html)])
    reported = capsys.readouterr()
    sweep.note("cli stdout", fetched.out + reported.out)
    sweep.note("cli stderr", fetched.err + reported.err)
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    # What fetch returns: each line's url and final_url, whole; the rest it says.
    returned = [(record.pop("url"), record.pop("final_url", None)) for record in records]
    assert_returned_whole(world, returned, world.pages())
    sweep.note("cli JSON lines", "\n".join(json.dumps(record) for record in records))
    sweep.note("cli report", html.read_text())
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("cli stderr", "cli JSON lines", "cli report")


# -- the browsers ----------------------------------------------------------------------------


async def test_no_secret_leaves_a_playwright_context(world: World, sweep: Sweep) -> None:
    from tests.support.browser import chromium

    pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
    from playwright.async_api import Error as PlaywrightError

    from robotgate.integrations.playwright import attach

    async with chromium() as browser, gate_for(sweep) as gate:
        # One context a proxy (attach asks robots.txt through the one it is given).
        routes: list[tuple[list[str], dict[str, str] | None]] = [(world.pages(), None)]
        for url, proxy in world.proxied():
            port = proxy.rsplit(":", 1)[1]
            routes.append(([url], {"server": f"http://{PUBLIC}:{port}", "username": "user",
                                   "password": PASSWORD}))
        for urls, proxy in routes:
            context = await browser.new_context(service_workers="block")
            await context.set_extra_http_headers({"Authorization": HEADERS["Authorization"]})
            handle = await attach(gate, context, proxy=proxy,  # type: ignore[arg-type]
                                  on_refused=lambda request, no: sweep.failure(no))
            page = await context.new_page()
            for url in urls:
                # Playwright's own error quotes the URL it was given: its words, not ours.
                with contextlib.suppress(PlaywrightError):
                    await page.goto(url)
            await handle.detach()
            await context.close()
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("log", "event", "exception str", "decision reason", "decision error")


async def test_no_secret_leaves_crawl4ai(world: World, sweep: Sweep,
                                         crawl4ai_home: Path) -> None:
    pytest.importorskip("crawl4ai", reason="crawl4ai is not installed")
    pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
    import importlib

    from crawl4ai import BrowserConfig, CacheMode, CrawlerRunConfig, HTTPCrawlerConfig

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    integration = importlib.import_module("robotgate.integrations.crawl4ai")
    run = CrawlerRunConfig(cache_mode=CacheMode.BYPASS, verbose=False)
    browser = BrowserConfig(headless=True, extra_args=CHROMIUM_ARGS, verbose=False)
    async with gate_for(sweep) as gate:
        # Its plain HTTP crawler, then its crawler in the system Chromium.
        for config, options in ((HTTPCrawlerConfig(), {}),
                                (browser, {"executable_path": chromium_path()})):
            async with integration.RobotGateCrawler(
                    gate, config, on_refused=lambda url, no: sweep.failure(no),
                    **options) as crawler:
                for result in await crawler.arun_many(world.pages(), config=run):
                    if not result.success:
                        sweep.note("result error", result.error_message)
    assert "/no/x" not in world.site.paths and "/no/hop" not in world.site.paths
    sweep.check("log", "event", "result error", "decision reason")


# -- a proxy's answer is not the site's ------------------------------------------------------


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = await Site().start()
    yield s
    await s.close()


class AttachedBrowser:
    """A Playwright context attached to the gate with the pages' proxy (``attach``'s
    ``proxy``, which robots.txt is asked through): each ask a ``page.goto``."""

    name = "browser"

    async def run(self, asks: list[Any], **options: Any) -> list[Any]:
        from playwright.async_api import Error as PlaywrightError

        from robotgate.integrations.playwright import attach
        from tests.contract.test_request_paths import Result
        from tests.support.browser import chromium

        [proxy] = {ask.proxy for ask in asks}
        port = proxy.rsplit(":", 1)[1]
        settings = {"server": f"http://{PUBLIC}:{port}", "username": "user",
                    "password": PASSWORD}
        refusals: dict[str, Disallowed] = {}
        results = []
        async with chromium() as browser, RobotGate(AGENT, is_private=public_loopback_1,
                                                    **options) as gate:
            context = await browser.new_context(service_workers="block")
            await attach(gate, context, proxy=settings,  # type: ignore[arg-type]
                         on_refused=lambda request, no: refusals.setdefault(request.url, no))
            page = await context.new_page()
            for ask in asks:
                try:
                    await page.goto(ask.url)
                except PlaywrightError as exc:
                    failure = str(exc)
                else:
                    failure = "answered"
                no = refusals.get(ask.url)
                results.append(Result(refused=no.decision.outcome, reason=no.decision.reason)
                               if no is not None else Result(error=failure))
        return results


@pytest.fixture(params=["fetch", "middleware", "httpx", "scrapy", "crawlee", "browser"])
def proxied_path(request: pytest.FixtureRequest) -> Any:
    from tests.contract.test_provenance_paths import PATHS

    if request.param == "browser":
        pytest.importorskip("playwright.async_api", reason="Playwright is not installed")
        return AttachedBrowser()
    return PATHS[request.param](request.param)


# Every path raises the proxy's failure as the proxy's (ProxyFailed), never the site's
# robots.txt unreachable: the gate's aiohttp transport, httpx's and Scrapy's alike.
PROXY_FAILURE_RAISED = {"fetch", "middleware", "httpx", "scrapy", "crawlee", "browser"}


async def test_robots_txt_a_proxy_answers_407_for_is_never_the_sites_answer(
        proxied_path: Any, site: Site) -> None:
    from tests.contract.test_provenance_paths import Ask

    proxy = await canary_proxy(407).start()
    try:
        results = await proxied_path.run([Ask(site.url("/page/1"), proxy=proxy.url),
                                          Ask(site.url("/no/private"), proxy=proxy.url)],
                                         delay=0)
    finally:
        await proxy.close()
    # robots.txt was asked through the proxy, which answered 407: the site was never
    # asked, so nothing it disallows may be fetched.
    assert any(target.endswith("/robots.txt") for target in proxy.targets), proxy.targets
    assert not [t for t in proxy.targets if "/no/" in t], proxy.targets
    assert site.paths == [], site.paths
    if proxied_path.name in PROXY_FAILURE_RAISED:
        # The proxy's failure, no verdict on the site: no refusal, each page failed.
        assert [r.refused for r in results] == [None, None], results
        assert all(r.error for r in results), results
    else:
        assert [r.refused for r in results] == ["unreachable", "unreachable"], results
        assert "the proxy answered 407" in results[1].reason, results


# -- the random canary, run after run --------------------------------------------------------

#: The soak's runs: each a random canary of its own, from seeds drawn from this run's.
RUNS = 100


def said_forms(canary: RandomCanary, url: str) -> list[str]:
    """Every form a foreign text may quote the canary in: header lines, a mapping's repr,
    JSON, pairs, a raw request, the URLs."""
    (name, value), quoted = canary.header, canary.quoted
    cookie = canary.headers["Cookie"]
    digest = canary.headers["Authorization"]
    return [
        f"{name}: {value}", f"ValueError: {name}: {value}\nmore", f"Cookie: {cookie}",
        f"Set-Cookie: {quoted[0]}=\"{quoted[1]}\"; Path=/", f"Authorization: {digest}",
        repr({name: value, "Cookie": cookie, "Authorization": digest}),
        json.dumps({name: value, "Set-Cookie": f'{quoted[0]}="{quoted[1]}"'}),
        repr([(name.lower().encode(), value.encode()), (b"cookie", cookie.encode())]),
        repr(f"GET / HTTP/1.1\r\nHost: h\r\n{name}: {value}\r\nCookie: {cookie}\r\n\r\n"
             .encode()),
        f"failed {url}: reset", f"URL('{url}')", f"see <{url}>.",
    ]


def sweep_said(canary: RandomCanary, url: str) -> list[tuple[str, str]]:
    """The canary's forms through each way robotgate says a foreign text: the redactor,
    an exception's text, a decision, an event, a log record, a refusal."""
    from robotgate.decision import Decision
    from robotgate.events import UrlSkipped
    from robotgate.redaction import RedactingFilter, failure_text, redact_text

    said: list[tuple[str, str]] = []
    for text in said_forms(canary, url):
        decision = Decision(False, f"could not ({text})", outcome="unreachable", error=text)
        record = logging.LogRecord("robotgate", logging.INFO, __file__, 1, "%s", (text,), None)
        RedactingFilter().filter(record)
        said += [("redact_text", redact_text(text)),
                 ("failure_text", failure_text(OSError(text))),
                 ("decision", repr(decision)),
                 ("event", repr(UrlSkipped(0.0, "http://h", "", url, text, "x", text))),
                 ("log", record.getMessage()),
                 ("refusal", repr(Disallowed(url, decision)) + str(Disallowed(url, decision)))]
    return said


@pytest.mark.soak
@pytest.mark.parametrize("run", range(RUNS))
async def test_a_random_canary_is_never_said_and_always_returned(run: int, site: Site) -> None:
    """Run after run, a canary made at random: never in what robotgate says (each form a
    foreign text may take, then a crawl of pages holding it: its logs, events, decisions,
    errors), and every URL returned whole.  A failure names the seed that replays it."""
    seed = random.Random(SEED).randrange(2**32) + run
    canary = RandomCanary.make(seed)
    user, password = canary.userinfo
    site.targets = [site.url("/landed" + canary.url_tail().partition("#")[0])]
    pages = [site.url("/page/6" + canary.url_tail()), site.url("/no/r" + canary.url_tail()),
             site.url("/page/7", f"{user}:{password}@"), site.url("/redirect/0")]
    sweep = Sweep()
    for surface, text in sweep_said(canary, pages[0]) + sweep_said(canary, pages[2]):
        sweep.note(surface, text)
    root = logging.getLogger("robotgate")
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(sweep)
    results: list[CrawlResult] = []
    try:
        async with RobotGate(AGENT, is_private=public_loopback_1, delay=0,
                             on_event=sweep.events.append) as gate:
            async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
                return ()

            def fetch(url: str, **options: Any) -> Any:
                return gate.fetch(url, headers=headers_for(url, None, canary), **options)

            await gate.crawl(pages, handler, fetch=fetch, retries=0, on_result=results.append)
    finally:
        root.removeHandler(sweep)
        root.setLevel(level)
    for result in results:
        sweep.note("result error", result.error)
        if result.decision is not None:
            sweep.decision(result.decision)
    sweep.check("log", "event", "decision reason", "redact_text",
                secrets=canary.secrets, seed=seed)
    replay = f"replay with ROBOTGATE_CANARY_SEED={seed}"
    assert sorted(r.url for r in results) == sorted(pages), replay
    finals = {r.url: r.final_url for r in results}
    assert finals[pages[0]] == pages[0] and finals[pages[2]] == pages[2], (finals, replay)
    assert finals[pages[3]] == site.targets[0], (finals, replay)
    assert finals[pages[1]] is None or finals[pages[1]] == pages[1], (finals, replay)
