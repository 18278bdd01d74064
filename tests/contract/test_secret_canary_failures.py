"""The secret canary's second half: the forms of a secret and the failures
``test_secret_canary.py`` does not send, through every in-process path and the CLI, with
every output swept (docs/secrets.md).

The forms, each canary unique: a password in a page URL's user information, one
holding an unescaped ``/`` (``http://user:pa/ss@host/``: parsers misread its start as
the port), a token in a query (``?access_token=``), ``Authorization: Bearer``, a
quoted cookie (``Cookie: session="..."``), an invented header (``X-Api-Key``),
aiohttp's ``auth=BasicAuth`` and ``proxy_auth=BasicAuth``, httpx's ``auth=``, a
proxy URL's password (a proxy answering 407, one refusing connections), a Redis
store URL's password (right and wrong), and the Basic credentials made of each.
The failures: a page answered, refused by robots.txt, a redirect into a private
address refused, a connection refused, a timeout, an invalid URL (the ValueError
subclass), a proxy's 407.  The paths: ``gate.fetch``, ``gate.middleware``, the
httpx transport, ``gate.crawl`` with a SQLite store and a named crawl, and the CLI's
``fetch``, ``crawls`` and ``check`` with a Redis store.

The outputs swept: every log record at DEBUG at the root logger (its traceback too),
but those the clients' own loggers make of their own requests (:data:`FOREIGN_LOGGERS`);
each exception's str, repr and args, and those of its causes and contexts, and
``traceback.format_exception``; decisions; events; ``gate.stats``; the crawl's summary
and ``explain()``; each row of the SQLite store and each Redis key and value; the
CLI's stdout and stderr.  What robotgate returns (a result's ``url`` and
``final_url``, a store's record of a URL) keeps each URL as given: there, and only
there, a URL given may stand whole (its resource key too), and nothing else may.
And the parts a user needs survive the redaction: the host and port, the path, the
parameter's name, the user name, the robots.txt rule quoted, the private address.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import sys
import traceback
from base64 import b64encode
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from robotgate import ProxyFailed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.events import Event
from robotgate.urls import resource_key
from tests.contract.test_request_paths import AGENT, PUBLIC, ROOT, public_loopback_1
from tests.support.canary_site import CanarySite
from tests.support.proxies import FailingProxy, closed_port

httpx = pytest.importorskip("httpx")
from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

pytestmark = [
    pytest.mark.slow,  # loopback servers, timeouts, child processes, Redis
    # aiohttp 3.14 deprecates auth= and proxy_auth=: users still pass them.
    pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The 'auth' parameter is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:The 'proxy_auth' parameter is deprecated:DeprecationWarning")]

USERINFO_PW = "CnUsr-5e1d0a"  # http://user:PASSWORD@host/
SPLIT_PW = "CnSpl/CnLit-5e1d0a"  # a password holding "/", unescaped
QUERY = "CnQry-5e1d0a"  # ?access_token=
BEARER = "CnBea-5e1d0a"  # Authorization: Bearer
COOKIE = "CnCoo-5e1d0a"  # Cookie: session="..."
API_KEY = "CnKey-5e1d0a"  # X-Api-Key
BASIC_PW = "CnBas-5e1d0a"  # aiohttp's auth=BasicAuth, httpx's auth=
PROXY_PW = "CnPrx-5e1d0a"  # a proxy URL's password
PROXY_AUTH_PW = "CnPxa-5e1d0a"  # aiohttp's proxy_auth=BasicAuth
REDIS_PW, REDIS_WRONG_PW = "CnRds-5e1d0a", "CnRdw-5e1d0a"  # a Redis store URL's


def _basic(user: str, password: str) -> str:
    return b64encode(f"{user}:{password}".encode()).decode()


#: What must never be said: each canary, each half of the split password, the Basic
#: credentials made of them.
SECRETS = (USERINFO_PW, *SPLIT_PW.split("/"), QUERY, BEARER, COOKIE, API_KEY, BASIC_PW,
           PROXY_PW, PROXY_AUTH_PW, REDIS_PW, REDIS_WRONG_PW,
           _basic("user", USERINFO_PW), _basic("user", BASIC_PW), _basic("user", PROXY_PW),
           _basic("user", PROXY_AUTH_PW), _basic("canary", REDIS_PW))
#: Secrets a request carries beside its URL: never even returned, nor stored.
NEVER_KEPT = tuple(s for s in SECRETS if s not in (USERINFO_PW, QUERY, *SPLIT_PW.split("/")))
HEADERS = {"Authorization": f"Bearer {BEARER}", "Cookie": f'session="{COOKIE}"',
           "X-Api-Key": API_KEY}
ROBOTS = "User-agent: *\nDisallow: /no/\n"
#: Loggers the clients log their own requests on, URL whole, with or without robotgate
#: (httpx's "HTTP Request: GET URL", the test server's access log): not robotgate's words.
FOREIGN_LOGGERS = ("httpx", "httpcore", "aiohttp.access", "aiohttp.server")
SLOW = 3.0  # how long /slow keeps its answer (the requests' timeout is shorter)
TIMEOUT = 0.5


@dataclass
class Site(CanarySite):
    """robots.txt disallowing /no/; /slow answers after :data:`SLOW` seconds;
    /to-private redirects into 127.0.0.2 with a password and the token; else a page."""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path)
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        if request.path == "/slow":
            await asyncio.sleep(SLOW)
        if request.path == "/to-private":
            target = f"http://u:{USERINFO_PW}@127.0.0.2:{self.port}/in?access_token={QUERY}"
            return web.Response(status=302, headers={"Location": target})
        return web.Response(text="<html><body><a href='/page/2'>2</a></body></html>",
                            content_type="text/html")


@dataclass(frozen=True)
class Ask:
    """A URL and what the caller gives with it: headers, Basic credentials, a proxy
    (its URL, or its address and ``proxy_auth``), a timeout."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    basic: bool = False
    proxy: str | None = None
    proxy_auth: bool = False
    timeout: float | None = None

    def aiohttp_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"headers": self.headers}
        if self.basic:
            options["auth"] = aiohttp.BasicAuth("user", BASIC_PW)
        if self.proxy_auth:
            options["proxy_auth"] = aiohttp.BasicAuth("user", PROXY_AUTH_PW)
        if self.proxy is not None:
            options["proxy"] = self.proxy
        if self.timeout is not None:
            options["timeout"] = aiohttp.ClientTimeout(total=self.timeout)
        return options


@dataclass
class World:
    site: Site
    proxy: FailingProxy  # answers 407, its URL with PROXY_PW
    dead: int  # a port refusing connections

    @property
    def split_url(self) -> str:
        return self.site.url("/split?access_token=" + QUERY, f"user:{SPLIT_PW}@")

    def asks(self) -> list[Ask]:
        site, token = self.site, f"?access_token={QUERY}"
        userinfo = f"user:{USERINFO_PW}@"
        plain = {k: v for k, v in HEADERS.items() if k != "Authorization"}
        proxy_address = f"http://{PUBLIC}:{self.proxy.port}"
        return [
            Ask(site.url("/page/1" + token, userinfo), plain),  # answered
            Ask(site.url("/page/bearer" + token), HEADERS),  # answered, every header
            Ask(site.url("/page/basic" + token), plain, basic=True),  # answered, Basic
            Ask(site.url("/no/x" + token, userinfo), plain),  # refused by robots.txt
            Ask(site.url("/to-private" + token), HEADERS),  # a redirect into 127.0.0.2
            Ask(f"http://{userinfo}{PUBLIC}:{self.dead}/dead{token}", plain),  # refused
            Ask(site.url("/slow" + token), HEADERS, timeout=TIMEOUT),  # a timeout
            Ask(f"http://{userinfo}{PUBLIC}:99999/invalid{token}", plain),  # invalid port
            Ask(self.split_url, plain),  # invalid: a password holding "/"
            Ask(f"https://{PUBLIC}:1001/proxied{token}", HEADERS, proxy=self.proxy.url),
            Ask(f"https://{PUBLIC}:1002/proxy-auth{token}", HEADERS, proxy=proxy_address,
                proxy_auth=True),
            Ask(f"https://{PUBLIC}:1003/dead-proxy{token}", HEADERS,
                proxy=f"http://user:{PROXY_PW}@{PUBLIC}:{self.dead}"),
        ]


@pytest.fixture
async def world() -> AsyncIterator[World]:
    site = await Site().start()
    proxy = await FailingProxy(407, PUBLIC, PROXY_PW).start()
    yield World(site, proxy, closed_port(PUBLIC))
    await proxy.close()
    await site.close()


class Sweep(logging.Handler):
    """Every text that left, by surface; ``returned``: texts that may hold the URLs
    given, whole (a result's URLs, a store's records)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.said: list[tuple[str, str]] = []
        self.returned: list[tuple[str, str]] = []
        self.events: list[Event] = []
        self.foreign: list[str] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.split(".")[0] in FOREIGN_LOGGERS or record.name in FOREIGN_LOGGERS:
            return
        self.said.append((f"log {record.name}", self.formatter.format(record)))

    def note(self, surface: str, text: object) -> None:
        self.said.append((surface, str(text)))

    def failure(self, exc: BaseException) -> None:
        """The exception, each cause and context, and its traceback as printed."""
        self.note("traceback", "".join(traceback.format_exception(exc)))
        seen: set[int] = set()
        stack: list[BaseException | None] = [exc]
        while stack:
            each = stack.pop()
            if each is None or id(each) in seen:
                continue
            seen.add(id(each))
            name = type(each).__name__
            self.note(f"exception str ({name})", str(each))
            self.note(f"exception repr ({name})", repr(each))
            self.note(f"exception args ({name})", repr(each.args))
            decision = getattr(each, "decision", None)
            if decision is not None:
                self.note("decision", f"{decision} {decision!r}")
            stack += [each.__cause__, each.__context__]

    def check(self, given: list[str], *needed: str) -> None:
        """No secret in what was said; in what was returned, none but inside a URL
        given, whole (or its resource key); and each of ``needed`` said somewhere
        (what a user needs survives)."""
        for event in self.events:
            self.note("event", repr(event))
        leaks = [(surface, [s for s in SECRETS if s in text], text)
                 for surface, text in self.said if any(s in text for s in SECRETS)]
        wholes = sorted({*given, *(resource_key(url) for url in given if _valid(url))},
                        key=len, reverse=True)
        for surface, text in self.returned:
            assert not [s for s in NEVER_KEPT if s in text], (surface, text)
            for url in wholes:
                text = text.replace(url, "<given>")
            if any(s in text for s in SECRETS):
                leaks.append((surface, [s for s in SECRETS if s in text], text))
        if leaks and os.environ.get("CANARY_DUMP"):  # the leaks whole, to read (a FILE)
            Path(os.environ["CANARY_DUMP"]).write_text(json.dumps(leaks, indent=1))
        assert leaks == [], leaks
        said = "\n".join(text for _, text in self.said)
        missing = [part for part in needed if part not in said]
        assert missing == [], (missing, said[-3000:])


def _valid(url: str) -> bool:
    try:
        resource_key(url)
    except ValueError:
        return False
    return True


@pytest.fixture
def sweep() -> Iterator[Sweep]:
    handler = Sweep()
    root = logging.getLogger()
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
    async with RobotGate(AGENT, is_private=public_loopback_1, delay=0,
                         on_event=sweep.events.append, **options) as gate:
        yield gate
        sweep.note("stats", repr(gate.stats))


#: Exceptions a client raises by itself before robotgate sees the request, quoting
#: the URL as given, with or without robotgate: aiohttp's session parses the URL before
#: any middleware runs; httpx's client parses it before its transport does.
CLIENTS_OWN = {"middleware": ("InvalidUrlClientError",), "httpx": ("InvalidURL",)}


def said_parts(world: World, path: str) -> list[str]:
    """What a user needs, said: the user name (but where the client takes it out of
    the URL before robotgate sees it: aiohttp's session, for the middleware) and the
    host, the path, the parameter's name, the rule, the private address, the proxy."""
    user = "" if path == "middleware" else "user:***@"
    # The proxy that refused, named (httpx keeps a proxy's credentials apart from its URL;
    # a crawl asks robots.txt through the proxy of its page's fetch, as gate.fetch does).
    proxy = {"fetch": [f"the proxy http://user:***@{PUBLIC}:{world.proxy.port} failed"],
             "middleware": [f"the proxy http://user:***@{PUBLIC}:{world.proxy.port} failed"],
             "crawl": [f"the proxy http://user:***@{PUBLIC}:{world.proxy.port} failed"],
             "httpx": [f"the proxy http://{PUBLIC}:{world.proxy.port} failed"]}.get(path, [])
    host = f"{PUBLIC}:{world.site.port}"
    return [f"{user}{host}/page/1?access_token=~", f"{user}{host}/no/x?access_token=~",
            "'Disallow: /no/'", "127.0.0.2", f"{PUBLIC}:{world.dead}/dead?access_token=~",
            *proxy]


@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawl"])
async def test_no_secret_leaves_in_any_failure_of_a_path(
        path: str, world: World, sweep: Sweep, tmp_path: Path) -> None:
    asks = world.asks()
    given = [ask.url for ask in asks]
    needed = said_parts(world, path)
    raised: list[BaseException] = []
    if path == "crawl":
        store = tmp_path / "store.sqlite3"
        from robotgate.store.sqlite import SQLiteStore

        by_url = {ask.url: ask for ask in asks}
        direct = [ask.url for ask in asks if ask.proxy is None]
        results: list[CrawlResult] = []

        async with gate_for(sweep, store=SQLiteStore(store)) as gate:
            def fetch(url: str, **options: Any) -> Any:
                ask = by_url.get(url, Ask(url))
                return gate.fetch(url, **ask.aiohttp_options(), **options)

            async def handler(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
                return ()

            summary = await gate.crawl(direct, handler, fetch=fetch, retries=0, scope="any",
                                       name="canary", on_result=results.append)
            sweep.note("summary", repr(summary))
            sweep.note("summary explain", "\n".join(summary.explain()))
            # robots.txt goes through the proxy of the page's fetch: a proxy that fails
            # (407, unreachable) ends the crawl with ProxyFailed.
            for ask in asks:
                if ask.proxy is not None:
                    with pytest.raises(ProxyFailed) as failed:
                        await gate.crawl([ask.url], handler, fetch=fetch, retries=0)
                    raised.append(failed.value)
        for result in results:
            sweep.note("result error", result.error)
            if result.decision is not None:
                sweep.note("decision", f"{result.decision} {result.decision!r}")
            sweep.returned.append(("result", repr(result)))
        assert sorted(r.url for r in results if r.url in given) == sorted(direct)
        # The refused redirect's target, as the client read it (its user information
        # dropped): CrawlResult.final_url returns it.
        given = [*given, f"http://127.0.0.2:{world.site.port}/in?access_token={QUERY}"]
        sweep.returned += _sqlite_rows(store)
        # The named crawl keeps each URL as given, to fetch it again on resuming.
        assert any(asks[0].url in text for _, text in sweep.returned)
        needed.append(f"user:***@{PUBLIC}:{world.site.port}/split?access_token=~")
    else:
        async with gate_for(sweep) as gate:
            for ask in asks:
                try:
                    await _ask(path, gate, ask)
                except Exception as exc:
                    raised.append(exc)
    for exc in raised:
        if type(exc).__name__ in CLIENTS_OWN.get(path, ()):
            continue
        sweep.failure(exc)
    kinds = {type(exc).__name__ for exc in raised}
    if path != "crawl":
        # Each failure was raised, so the sweep read it.
        assert len(raised) >= 8, kinds
        if path == "fetch":  # the others' clients refuse it before robotgate sees it
            needed.append(f"user:***@{PUBLIC}:{world.site.port}/split?access_token=~")
    assert "/no/x" not in world.site.paths and "/in" not in world.site.paths
    sweep.check(given, *needed)


async def _ask(path: str, gate: RobotGate, ask: Ask) -> None:
    if path == "fetch":
        async with gate.fetch(ask.url, **ask.aiohttp_options()) as resp:
            await resp.read()
    elif path == "middleware":
        async with aiohttp.ClientSession(middlewares=(gate.middleware,)) as session, \
                session.get(ask.url, **ask.aiohttp_options()) as resp:
            await resp.read()
    else:
        inner = httpx.AsyncHTTPTransport(proxy=ask.proxy)
        auth = ("user", BASIC_PW) if ask.basic or ask.proxy_auth else None
        async with httpx.AsyncClient(transport=RobotGateTransport(gate, inner),
                                     follow_redirects=True, auth=auth,
                                     timeout=ask.timeout or 5.0) as client:
            await client.get(ask.url, headers=ask.headers)


def _sqlite_rows(path: Path) -> list[tuple[str, str]]:
    """Every row of every table of the SQLite store, as text."""
    rows: list[tuple[str, str]] = []
    with sqlite3.connect(path) as conn:
        tables = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            rows += [(f"sqlite {table}", repr(row))
                     for row in conn.execute(f'SELECT * FROM "{table}"')]
    assert rows, tables
    return rows


# -- the CLI, with a Redis store behind a password ---------------------------------------------


@pytest.fixture
def locked_redis(tmp_path: Path) -> Iterator[int]:
    """A redis-server whose user ``canary`` has the password :data:`REDIS_PW` (the
    default user stays open, for the server's own start-up check)."""
    from testbed.redis_server import RedisServer, find_redis_server

    if find_redis_server() is None:
        pytest.skip("redis-server not found: install the Debian package redis-server")
    (tmp_path / "redis").mkdir()
    server = RedisServer.start(tmp_path / "redis", extra=[
        "--user", "canary", "on", f">{REDIS_PW}", "~*", "&*", "+@all"])
    try:
        yield server.port
    finally:
        server.close()


async def _cli(*argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "robotgate", *argv, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)  # hang guard
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# A soak: six CLI processes, two of which wait out a Redis that refuses their password
# (about 40 s on a busy machine); CI runs it on every run.
@pytest.mark.soak
async def test_no_secret_leaves_the_cli_with_a_redis_store(
        world: World, sweep: Sweep, locked_redis: int, tmp_path: Path) -> None:
    import redis.asyncio as aioredis

    site = world.site
    token = f"?access_token={QUERY}"
    urls = [site.url("/page/1" + token, f"user:{USERINFO_PW}@"),
            site.url("/no/x" + token, f"user:{USERINFO_PW}@"),
            f"http://user:{USERINFO_PW}@{PUBLIC}:{world.dead}/dead{token}",
            f"http://user:{USERINFO_PW}@{PUBLIC}:99999/invalid{token}", world.split_url]
    store = f"redis://canary:{REDIS_PW}@{PUBLIC}:{locked_redis}/0"
    wrong = f"redis://canary:{REDIS_WRONG_PW}@{PUBLIC}:{locked_redis}/0"
    lines = tmp_path / "lines.jsonl"
    runs = [
        ("fetch", "--agent", AGENT, "--delay", "0", "--retries", "0", "--store", store,
         "--crawl", "canary", "--out", str(lines), *urls),
        ("fetch", "--agent", AGENT, "--store", wrong, urls[0]),  # refused by Redis
        ("crawls", "--store", store), ("crawls", "--store", wrong),
        ("check", site.url("/robots.txt", f"user:{USERINFO_PW}@"), *urls[:2],
         "/p" + token),
        ("check", "--json", site.url("/robots.txt"), urls[0]),
    ]
    codes = []
    for argv in runs:
        code, out, err = await _cli(*argv)
        codes.append(code)
        sweep.note(f"cli {argv[0]} stdout", out)
        sweep.note(f"cli {argv[0]} stderr", err)
    assert codes == [2, 2, 0, 2, 1, 0], codes  # an invalid URL, Redis's refusals, /no/x
    # What fetch returns: each line's url and final_url, whole; the rest it says.
    for line in lines.read_text().splitlines():
        record = json.loads(line)
        returned = f"{record.pop('url')} {record.pop('final_url', '')}"
        sweep.returned.append(("cli fetch url", returned))
        sweep.note("cli fetch line", json.dumps(record))
    client = aioredis.Redis(port=locked_redis, username="canary", password=REDIS_PW)
    try:
        keys = await client.keys("*")
        assert keys
        for key in keys:
            kind = (await client.type(key)).decode()
            value: Any = {"string": client.get, "hash": client.hgetall,
                          "set": client.smembers}.get(kind, client.type)(key)
            sweep.returned.append((f"redis {kind}", f"{key!r} {await value!r}"))
    finally:
        await client.aclose()
    assert "/no/x" not in site.paths
    host = f"{PUBLIC}:{site.port}"
    sweep.check(urls, f"redis://canary:***@{PUBLIC}:{locked_redis}/0",
                f"user:***@{host}/split?access_token=~", f"user:***@{host}/no/x?access_token=~",
                f"user:***@{PUBLIC}:99999/invalid?access_token=~", "'Disallow: /no/'")
