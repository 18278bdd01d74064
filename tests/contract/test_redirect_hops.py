"""The redirect contract: the request a redirect is followed with, on every client path,
is its client's own hop, and where robotgate follows the redirect (the core's exchange:
``gate.fetch``, crawlee) it is the core's one rule
(:func:`robotgate.policy.redirect_hop.next_hop`).  Credentials, in whatever form they
were given (``auth=`` per call or per session, credential headers, a URL's userinfo),
go only to their origin on every path (``gate.fetch``, ``gate.middleware``,
``gate.crawl``, the httpx transport; see "credentials in every form" below; Scrapy's
Authorization header and HttpAuthMiddleware's settings, crawlee's request headers and
userinfo, as Scrapy and crawlee alone send them; the browser route's and crawlee's
PlaywrightCrawler's extra headers, http_credentials and userinfo, as Chromium alone
answers a 401 Basic challenge with them).

The table: GET, HEAD, POST and PUT, each answered 301, 302, 303, 307 or 308 to the same
origin or to another, sent with an Authorization, a Cookie and a custom header (and a
body, for POST and PUT).  A loopback server records what the redirect's target
received: method, body, and the three headers.  Each path runs the table with the gate
and its client runs it without; the two must agree, and each client's own hop is the
core's value (aiohttp 3.14, Scrapy 2.19 and crawlee 1.11's impit client in every case)
but for the differences httpx is known for (:func:`httpx_rule`).  Paths: ``gate.fetch``
(the gate's session, yours, your session's default headers), ``gate.middleware``, the
httpx transport, Scrapy's middleware (in a subprocess: tests/contract/scrapy_hops_runner.py),
crawlee's client, and Playwright's route (``attach``), whose requests a page makes: the
cases a browser can make, against Chromium following the same redirects itself (see
"Playwright" below for which, and why not the others).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import aiohttp
import pytest
from aiohttp import web

from robotgate import RobotGate
from robotgate.policy.redirect_hop import next_hop

httpx = pytest.importorskip("httpx")

from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

pytestmark = pytest.mark.slow

AGENT = "HopBot/1.0"
ROOT = Path(__file__).resolve().parents[2]
HERE, THERE = "127.0.0.1", "127.0.0.3"
METHODS = ("GET", "HEAD", "POST", "PUT")
STATUSES = (301, 302, 303, 307, 308)
BODY = b"the request's body"
HEADERS = {"Authorization": "Bearer secret", "Cookie": "sid=42", "X-Custom": "mine"}
NON_HTTP_LOCATION = "ftp://user:FtpPw-31c@127.0.0.1/file"
#: The start of a run whose every request without Authorization is answered 401 Basic.
CHALLENGE = "challenge-"


class Case(NamedTuple):
    method: str
    status: int
    other_origin: bool

    @property
    def name(self) -> str:
        return f"{self.method}-{self.status}-{'other' if self.other_origin else 'same'}"


CASES = [Case(method, status, other) for method in METHODS for status in STATUSES
         for other in (False, True)]


class Heard(NamedTuple):
    """What the redirect's target received."""

    method: str
    body: bytes
    authorization: str | None
    cookie: str | None
    custom: str | None


@dataclass
class Hosts:
    """Two loopback servers, two origins: ``/from/<case>`` answers the case's redirect to
    ``/to/<case>`` here or there, which records what it received (``sent``: what the
    redirect's request received); ``/page`` is a page to run a browser's requests from."""

    heard: dict[str, Heard]
    ports: dict[str, int]
    sent: dict[str, Heard] = field(default_factory=dict)

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.ports[host]}{path}"

    def start(self, case: Case, run: str) -> str:
        return self.url(HERE, f"/from/{run}/{case.name}")

    def target(self, case: Case, run: str) -> str:
        return self.url(THERE if case.other_origin else HERE, f"/to/{run}/{case.name}")


@pytest.fixture
async def hosts() -> AsyncIterator[Hosts]:
    found = Hosts({}, {})

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if path == "/page":
            return web.Response(text="<html><body></body></html>", content_type="text/html")
        if path == "/to-ftp":
            return web.Response(status=302, headers={"Location": NON_HTTP_LOCATION})
        if not path.startswith(("/from/", "/to/")):
            raise web.HTTPNotFound()  # a browser's own (/favicon.ico)
        body = await request.read()
        kind, run, name = path.split("/")[1:4]
        if run.startswith(CHALLENGE) and "Authorization" not in request.headers:
            # A run that asks for credentials (a browser sends http_credentials, or a
            # URL's userinfo, only when asked): what it heard unless they come.
            where = found.sent if kind == "from" else found.heard
            where[f"{run}/{name}"] = Heard(request.method, body, None, None, None)
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        if kind == "from":
            method, status, where = name.split("-")
            case = Case(method, int(status), where == "other")
            found.sent[f"{run}/{name}"] = Heard(
                request.method, body, request.headers.get("Authorization"),
                request.headers.get("Cookie"), request.headers.get("X-Custom"))
            return web.Response(status=case.status,
                                headers={"Location": found.target(case, run)})
        found.heard[f"{run}/{name}"] = Heard(
            request.method, body, request.headers.get("Authorization"),
            request.headers.get("Cookie"), request.headers.get("X-Custom"))
        return web.Response(text="done")

    runners = []
    for host in (HERE, THERE):
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, 0).start()
        found.ports[host] = runner.addresses[0][1]
        runners.append(runner)
    try:
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


def core(case: Case) -> Heard:
    """What the target hears by the core's rule."""
    to = THERE if case.other_origin else HERE
    hop = next_hop(case.status, case.method, f"http://{HERE}:1/", f"http://{to}:1/")
    sent_body = BODY if case.method in ("POST", "PUT") else b""
    headers = hop.headers(HEADERS)
    return Heard(hop.method, hop.body(sent_body) or b"", headers.get("Authorization"),
                 headers.get("Cookie"), headers.get("X-Custom"))


#: One request: (method, url, headers, body or None) -> awaited until its body is read.
Send = Callable[[str, str, dict[str, str], "bytes | None"], Awaitable[None]]


async def run_table(hosts: Hosts, run: str, send: Send) -> dict[Case, Heard]:
    """Every case sent by ``send``; what each target heard."""
    for case in CASES:
        body = BODY if case.method in ("POST", "PUT") else None
        await asyncio.wait_for(send(case.method, hosts.start(case, run), dict(HEADERS), body),
                               10)  # a hang guard
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in CASES}
    missing = [case.name for case, got in heard.items() if got is None]
    assert not missing, f"{run}: no hop reached the target for {missing}"
    return {case: got for case, got in heard.items() if got is not None}


def differences(got: dict[Case, Heard], expected: dict[Case, Heard]) -> dict[str, Any]:
    return {case.name: (got[case], expected[case]) for case in CASES
            if got[case] != expected[case]}


def open_gate(**options: Any) -> RobotGate:
    # Both loopback hosts play public sites: the hop is what is tested, not the address rule.
    return RobotGate(AGENT, delay=0, is_private=lambda address: False, **options)


# -- aiohttp: gate.fetch follows by the core's rule; the middleware by aiohttp's own ------


async def plain_aiohttp(hosts: Hosts, defaults: bool = False) -> dict[Case, Heard]:
    """The table through plain aiohttp; ``defaults``: the headers are the session's."""
    async with aiohttp.ClientSession(headers=HEADERS if defaults else None) as session:
        async def send(method: str, url: str, headers: dict[str, str], body: bytes | None) -> None:
            async with session.request(method, url, headers=None if defaults else headers,
                                       data=body) as resp:
                await resp.read()

        return await run_table(hosts, f"aiohttp-{defaults}", send)


async def test_aiohttps_own_hop_is_the_cores(hosts: Hosts) -> None:
    own = await plain_aiohttp(hosts)
    assert differences(own, {case: core(case) for case in CASES}) == {}


@pytest.mark.parametrize("session", ["owned", "yours", "your-defaults"])
async def test_gate_fetch_follows_as_aiohttp_does(hosts: Hosts, session: str) -> None:
    """``your-defaults``: the headers are your session's own, not the call's."""
    defaults = session == "your-defaults"
    own = await plain_aiohttp(hosts, defaults)
    async with aiohttp.ClientSession(headers=HEADERS if defaults else None) as yours, open_gate(
            session=None if session == "owned" else yours) as gate:
        async def send(method: str, url: str, headers: dict[str, str],
                       body: bytes | None) -> None:
            if defaults:
                await gate.fetch(url, method=method, data=body)
            else:
                await gate.fetch(url, method=method, headers=headers, data=body)

        through_gate = await run_table(hosts, f"fetch-{session}", send)
    assert differences(through_gate, own) == {}


async def test_gate_middleware_leaves_aiohttps_hop_as_it_is(hosts: Hosts) -> None:
    own = await plain_aiohttp(hosts)
    async with open_gate() as gate, aiohttp.ClientSession(
            middlewares=(gate.middleware,)) as session:
        async def send(method: str, url: str, headers: dict[str, str],
                       body: bytes | None) -> None:
            async with session.request(method, url, headers=headers, data=body) as resp:
                await resp.read()

        through_gate = await run_table(hosts, "middleware", send)
    assert differences(through_gate, own) == {}


# -- a redirect to a URL that is not http(s): each path raises its client's own error -----

@pytest.mark.parametrize("path", ["aiohttp", "fetch-owned", "fetch-yours", "middleware"])
async def test_a_redirect_to_ftp_raises_aiohttps_own_error(hosts: Hosts, path: str) -> None:
    """Plain aiohttp raises ``NonHttpUrlRedirectClientError``; so does every aiohttp path
    (gate.fetch's a robotgate ``InvalidURL`` too), rather than return the 3xx."""
    from robotgate.urls import InvalidURL

    url = hosts.url(HERE, "/to-ftp")
    async with aiohttp.ClientSession() as yours, open_gate(
            session=yours if path == "fetch-yours" else None) as gate:
        with pytest.raises(aiohttp.NonHttpUrlRedirectClientError) as raised:
            if path.startswith("fetch"):
                await gate.fetch(url)
            else:
                middlewares = (gate.middleware,) if path == "middleware" else ()
                async with aiohttp.ClientSession(middlewares=middlewares) as session, \
                        session.get(url) as resp:
                    await resp.read()
    if path.startswith("fetch"):
        assert isinstance(raised.value, InvalidURL)
        assert "ftp://user:***@127.0.0.1/file" in str(raised.value)
        assert "FtpPw-31c" not in str(raised.value)


async def test_the_httpx_transport_raises_httpxs_own_error_for_a_redirect_to_ftp(
        hosts: Hosts) -> None:
    url = hosts.url(HERE, "/to-ftp")
    async with httpx.AsyncClient(follow_redirects=True) as plain:
        with pytest.raises(httpx.UnsupportedProtocol):
            await plain.get(url)
    async with open_gate() as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate), follow_redirects=True) as client:
        with pytest.raises(httpx.UnsupportedProtocol):
            await client.get(url)


@pytest.mark.parametrize("call", ["send_request", "crawl"])
async def test_crawlees_client_returns_a_redirect_to_ftp_as_crawlee_alone(
        hosts: Hosts, call: str) -> None:
    """crawlee 1.11's own client (impit) returns a redirect to ``ftp:`` as the answer,
    its Location as the server wrote it; so does ``RobotGateHttpClient`` (the core's
    exchange ends there), no error of either."""
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    from crawlee import Request
    from crawlee.http_clients import ImpitHttpClient

    from robotgate.integrations.crawlee import RobotGateHttpClient

    url = hosts.url(HERE, "/to-ftp")

    async def answer(client: Any) -> tuple[int, str | None]:
        if call == "crawl":
            got = (await client.crawl(Request.from_url(url))).http_response
        else:
            got = await client.send_request(url)
        return got.status_code, got.headers.get("location")

    async with ImpitHttpClient(follow_redirects=True) as plain:
        alone = await asyncio.wait_for(answer(plain), 10)  # a hang guard
    async with open_gate() as gate, RobotGateHttpClient(gate) as client:
        gated = await asyncio.wait_for(answer(client), 10)
    assert gated == alone == (302, NON_HTTP_LOCATION)


async def test_gate_crawl_records_a_redirect_to_ftp_as_the_pages_error(hosts: Hosts) -> None:
    """gate.crawl: the page's result is aiohttp's error for it (as gate.fetch raises),
    named without the Location's password; the crawl goes on to the next page."""
    from robotgate.crawl import CrawlResult

    results: list[CrawlResult] = []
    page = hosts.url(HERE, "/page")
    async with open_gate() as gate:
        summary = await asyncio.wait_for(gate.crawl(
            [hosts.url(HERE, "/to-ftp"), page], _no_links, retries=0,
            on_result=results.append), 20)  # a hang guard
    by_url = {result.url: result for result in results}
    failed = by_url[hosts.url(HERE, "/to-ftp")]
    assert failed.status is None and failed.error is not None, failed
    assert failed.error.startswith("AiohttpNonHttpRedirect: "), failed.error
    assert "ftp://user:***@127.0.0.1/file" in failed.error
    assert "FtpPw-31c" not in failed.error
    assert by_url[page].status == 200 and by_url[page].error is None
    assert (summary.pages, summary.errors) == (1, 1)


# -- httpx: httpx follows redirects above the transport, by its own rule ------------------

def httpx_rule(case: Case) -> Heard:
    """The core's value, with httpx's known differences: it turns a 302 of any method but
    HEAD into a GET, and takes a Cookie header off every hop (its jar sets the next one)."""
    ours = core(case)
    if case.status == 302 and case.method == "PUT":
        ours = ours._replace(method="GET", body=b"")
    return ours._replace(cookie=None)


async def plain_httpx(hosts: Hosts, run: str, transport: Any = None) -> dict[Case, Heard]:
    async with httpx.AsyncClient(transport=transport, follow_redirects=True) as client:
        async def send(method: str, url: str, headers: dict[str, str], body: bytes | None) -> None:
            await client.request(method, url, headers=headers, content=body)

        return await run_table(hosts, run, send)


async def test_the_httpx_transport_leaves_httpxs_hop_as_it_is(hosts: Hosts) -> None:
    own = await plain_httpx(hosts, "httpx")
    assert differences(own, {case: httpx_rule(case) for case in CASES}) == {}
    async with open_gate() as gate:
        through_gate = await plain_httpx(hosts, "httpx-gate", RobotGateTransport(gate))
    assert differences(through_gate, own) == {}


# -- crawlee: the core's exchange follows, by the core's rule -----------------------------


async def crawlee_table(hosts: Hosts, run: str, client: Any) -> dict[Case, Heard]:
    async def send(method: str, url: str, headers: dict[str, str], body: bytes | None) -> None:
        await client.send_request(url, method=method, headers=headers, payload=body)

    return await run_table(hosts, run, send)


async def test_crawlees_path_follows_by_the_cores_rule(hosts: Hosts) -> None:
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    from crawlee.http_clients import ImpitHttpClient

    from robotgate.integrations.crawlee import RobotGateHttpClient

    async with ImpitHttpClient(follow_redirects=True) as plain:
        own = await crawlee_table(hosts, "crawlee", plain)
    async with open_gate() as gate, RobotGateHttpClient(gate) as client:
        through_gate = await crawlee_table(hosts, "crawlee-gate", client)
    assert differences(through_gate, {case: core(case) for case in CASES}) == {}
    # crawlee's own client (impit) follows as the core's rule does, in every case.
    assert differences(own, through_gate) == {}


@pytest.mark.parametrize("other_origin", [False, True])
async def test_gate_fetch_drops_the_calls_cookies_as_aiohttp_does(
        hosts: Hosts, other_origin: bool) -> None:
    case = Case("GET", 302, other_origin)
    credentials = {"cookies": {"sid": "42"}}  # (aiohttp 3.14 deprecates auth=BasicAuth)
    async with aiohttp.ClientSession() as session, session.get(
            hosts.start(case, "plain-auth"), **credentials) as resp:
        await resp.read()
    async with open_gate() as gate:
        await gate.fetch(hosts.start(case, "fetch-auth"), **credentials)
    own, through_gate = (hosts.heard[f"{run}/{case.name}"] for run in ("plain-auth", "fetch-auth"))
    assert through_gate == own
    assert (own.cookie is None) is other_origin


# -- credentials in every form: they go only to the origin they were given for -----------
#
# The rule (the core's, :data:`~robotgate.policy.redirect_hop.ORIGIN_SCOPED`): a hop to
# another origin carries no credentials of the caller's, whatever form they were given
# in; a hop to the same origin carries them as the client does.  aiohttp 3.14 drops a
# call's ``auth=``, a URL's userinfo and the credential headers on a hop to another
# origin, but sends a session's ``auth=`` again to it (``ClientSession._request`` takes
# the session's default for any origin when it has no ``base_url``): robotgate's paths
# drop it there too, the one difference from plain aiohttp, asserted as such.

BASIC = "Basic dXNlcjpwYXNz"  # user:pass
CREDENTIAL_FORMS = ("call-auth", "session-auth", "userinfo", "session-headers", "call-headers")


@contextlib.contextmanager
def deprecated_auth() -> Iterator[None]:
    """aiohttp 3.14 deprecates ``auth=BasicAuth``; its users still pass it."""
    with warnings.catch_warnings():
        for message in ("The 'auth' parameter is deprecated", "BasicAuth is deprecated"):
            warnings.filterwarnings("ignore", message, DeprecationWarning)
        yield


def credentials(form: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The session's and the call's keyword arguments that give ``form``'s credentials."""
    auth = aiohttp.BasicAuth("user", "pass")
    return {
        "call-auth": ({}, {"auth": auth}),
        "session-auth": ({"auth": auth}, {}),
        "userinfo": ({}, {}),
        "session-headers": ({"headers": {"Authorization": BASIC}}, {}),
        "call-headers": ({}, {"headers": {"Authorization": BASIC}}),
    }[form]


def with_userinfo(url: str, form: str) -> str:
    return url.replace("http://", "http://user:pass@") if form == "userinfo" else url


def credential_rule(case: Case) -> str | None:
    """The Authorization the target hears by the core's rule."""
    return None if case.other_origin else BASIC


CREDENTIAL_CASES = [Case("GET", 302, other) for other in (False, True)]


async def aiohttp_credentials(hosts: Hosts, form: str, path: str) -> dict[Case, str | None]:
    """What each target heard, the request sent by ``path``: plain aiohttp,
    ``gate.fetch`` (the gate's session or yours) or ``gate.middleware``."""
    run = f"credentials-{path}-{form}"
    with deprecated_auth():
        session_kwargs, call_kwargs = credentials(form)
        if path == "fetch-owned":  # the gate's own session: a call's credentials only
            async with open_gate() as gate:
                for case in CREDENTIAL_CASES:
                    await asyncio.wait_for(gate.fetch(
                        with_userinfo(hosts.start(case, run), form), **call_kwargs), 10)
        else:
            async with aiohttp.ClientSession(**session_kwargs) as session, open_gate(
                    session=session if path in ("fetch-yours", "crawl") else None) as gate:
                if path == "crawl":  # gate.crawl over your session, its URLs as given
                    summary = await asyncio.wait_for(gate.crawl(
                        [with_userinfo(hosts.start(case, run), form)
                         for case in CREDENTIAL_CASES], _no_links, retries=0), 20)
                    assert summary.pages == len(CREDENTIAL_CASES)
                if path == "middleware":
                    session = aiohttp.ClientSession(middlewares=(gate.middleware,),
                                                    **session_kwargs)
                async with session:
                    for case in CREDENTIAL_CASES if path != "crawl" else ():
                        url = with_userinfo(hosts.start(case, run), form)
                        if path == "fetch-yours":
                            await asyncio.wait_for(gate.fetch(url, **call_kwargs), 10)
                            continue
                        async with session.get(url, **call_kwargs) as resp:
                            await resp.read()
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in CREDENTIAL_CASES}
    assert all(got is not None for got in heard.values()), f"{run}: a hop went nowhere"
    first = [hosts.sent[f"{run}/{case.name}"].authorization for case in CREDENTIAL_CASES]
    assert first == [BASIC, BASIC], f"{run}: the first request went without its credentials"
    return {case: got.authorization for case, got in heard.items() if got is not None}


@pytest.mark.parametrize("form", CREDENTIAL_FORMS)
async def test_plain_aiohttps_credentials_across_origins(hosts: Hosts, form: str) -> None:
    own = await aiohttp_credentials(hosts, form, "plain")
    expected = {case: credential_rule(case) for case in CREDENTIAL_CASES}
    if form == "session-auth":
        # aiohttp sends the session's auth= to the other origin: the one difference.
        expected[Case("GET", 302, True)] = BASIC
    assert own == expected


async def _no_links(url: str, resp: aiohttp.ClientResponse) -> tuple[str, ...]:
    return ()


@pytest.mark.parametrize("path", ["fetch-owned", "fetch-yours", "middleware", "crawl"])
@pytest.mark.parametrize("form", CREDENTIAL_FORMS)
async def test_aiohttp_paths_send_credentials_only_to_their_origin(
        hosts: Hosts, form: str, path: str) -> None:
    if path == "crawl" and form.startswith("call-"):
        pytest.skip("gate.crawl takes URLs, not a call's arguments")
    if path == "fetch-owned" and form.startswith("session-"):
        pytest.skip("the gate's own session has no credentials of its own")
    through_gate = await aiohttp_credentials(hosts, form, path)
    assert through_gate == {case: credential_rule(case) for case in CREDENTIAL_CASES}


HTTPX_CREDENTIAL_FORMS = ("client-auth", "call-auth", "userinfo", "client-headers",
                          "call-headers")


async def httpx_credentials(hosts: Hosts, form: str, gate: RobotGate | None
                            ) -> dict[Case, str | None]:
    run = f"credentials-httpx-{gate is not None}-{form}"
    client_kwargs: dict[str, Any] = {
        "client-auth": {"auth": ("user", "pass")},
        "client-headers": {"headers": {"Authorization": BASIC}}}.get(form, {})
    call_kwargs: dict[str, Any] = {
        "call-auth": {"auth": ("user", "pass")},
        "call-headers": {"headers": {"Authorization": BASIC}}}.get(form, {})
    transport = RobotGateTransport(gate) if gate is not None else None
    async with httpx.AsyncClient(transport=transport, follow_redirects=True,
                                 **client_kwargs) as client:
        for case in CREDENTIAL_CASES:
            await asyncio.wait_for(client.get(with_userinfo(hosts.start(case, run), form),
                                              **call_kwargs), 10)
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in CREDENTIAL_CASES}
    assert all(got is not None for got in heard.values()), f"{run}: a hop went nowhere"
    return {case: got.authorization for case, got in heard.items() if got is not None}


@pytest.mark.parametrize("form", HTTPX_CREDENTIAL_FORMS)
async def test_the_httpx_transport_sends_credentials_only_to_their_origin(
        hosts: Hosts, form: str) -> None:
    own = await httpx_credentials(hosts, form, None)
    assert own == {case: credential_rule(case) for case in CREDENTIAL_CASES}
    async with open_gate() as gate:
        through_gate = await httpx_credentials(hosts, form, gate)
    assert through_gate == own


# -- Scrapy: its RedirectMiddleware follows, by its own rule ------------------------------


def nothing_private(address: object) -> bool:
    """The Scrapy runs' ``ROBOTGATE_IS_PRIVATE``: both loopback hosts play public sites."""
    return False


async def run_scrapy(requests: list[list[Any]], gate: bool,
                     settings: dict[str, Any] | None = None) -> None:
    """Send ``requests`` ([method, url, headers, body]) through Scrapy in a child."""
    config = json.dumps({"requests": requests, "gate": gate, "settings": settings or {}})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.contract.scrapy_hops_runner", config, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)  # a hang guard
    assert proc.returncode == 0, err.decode()[-3000:]
    assert json.loads(out.decode().splitlines()[-1]) == len(requests), err.decode()[-3000:]


async def scrapy_table(hosts: Hosts, run: str, gate: bool) -> dict[Case, Heard]:
    await run_scrapy([[case.method, hosts.start(case, run), HEADERS,
                       BODY.decode() if case.method in ("POST", "PUT") else None]
                      for case in CASES], gate)

    async def nothing_to_send(method: str, url: str, headers: dict[str, str],
                              body: bytes | None) -> None:
        """Scrapy sent them all."""

    return await run_table(hosts, run, nothing_to_send)


async def test_the_scrapy_middleware_leaves_scrapys_hop_as_it_is(hosts: Hosts) -> None:
    pytest.importorskip("scrapy")
    own = await scrapy_table(hosts, "scrapy", gate=False)
    through_gate = await scrapy_table(hosts, "scrapy-gate", gate=True)
    assert differences(through_gate, own) == {}
    # Scrapy 2.19's own hop is the core's rule in every case.
    assert differences(own, {case: core(case) for case in CASES}) == {}


#: Scrapy's forms: an Authorization header, HttpAuthMiddleware's settings (restricted to
#: the first origin's host, as Scrapy 2.19 requires a domain).  No userinfo: Scrapy 2.19
#: alone refuses such a URL (ValueError: invalid hostname), so there is no hop to compare.
SCRAPY_CREDENTIAL_FORMS = ("headers", "httpauth")


@pytest.mark.parametrize("form", SCRAPY_CREDENTIAL_FORMS)
async def test_the_scrapy_middleware_sends_credentials_as_scrapy_alone(
        hosts: Hosts, form: str) -> None:
    """Scrapy 2.19 alone drops Authorization on a hop to another origin (scheme, host or
    port: its RedirectMiddleware) and HttpAuthMiddleware adds it again only within
    HTTPAUTH_DOMAIN; it sends no userinfo as Authorization.  Through the gate: the same."""
    pytest.importorskip("scrapy")
    # Scrapy matches HTTPAUTH_DOMAIN against the URL's netloc, port included.
    domain = f"{HERE}:{hosts.ports[HERE]}"
    settings = ({"HTTPAUTH_USER": "user", "HTTPAUTH_PASS": "pass", "HTTPAUTH_DOMAIN": domain}
                if form == "httpauth" else {})
    headers = {"Authorization": BASIC} if form == "headers" else {}
    heard: dict[str, dict[Case, str | None]] = {}
    for run, gate in ((f"scrapy-cred-{form}", False), (f"scrapy-gate-cred-{form}", True)):
        await run_scrapy([["GET", with_userinfo(hosts.start(case, run), form), headers, None]
                          for case in CREDENTIAL_CASES], gate, settings)
        heard[run] = {case: hosts.heard[f"{run}/{case.name}"].authorization
                      for case in CREDENTIAL_CASES}
    alone, gated = heard.values()
    assert gated == alone
    expected = {case: None if form == "userinfo" else credential_rule(case)
                for case in CREDENTIAL_CASES}
    assert alone == expected  # Scrapy's own rule: the credentials stay on their origin


@pytest.mark.parametrize("form", ["pairs", "multidict"])
async def test_gate_fetch_drops_credentials_from_headers_in_any_form(hosts: Hosts,
                                                                     form: str) -> None:
    from multidict import CIMultiDict

    pairs = [("authorization", "Bearer secret"), ("Cookie", "sid=42"), ("X-Custom", "mine")]
    headers: Any = pairs if form == "pairs" else CIMultiDict(pairs)
    case = Case("GET", 307, True)
    async with open_gate() as gate:
        await gate.fetch(hosts.start(case, form), headers=headers)
    assert hosts.heard[f"{form}/{case.name}"] == Heard("GET", b"", None, None, "mine")


# -- Playwright: attach's route follows by the core's rule; Chromium by its own -------------
#
# A browser makes three ways of the table's requests: a navigation (page.goto: GET), a
# form's submission (POST, a text/plain body) and a page's fetch() (GET, HEAD, POST, PUT,
# each with its body).  Authorization and the custom header are the context's extra
# headers for the first two, fetch's own for the third; the Cookie is the context's jar
# (one cookie for each origin), which a browser sends by URL, hop by hop.  The route
# hands Chromium the last hop's answer, so Chromium never sees the redirect: the route's
# hop is compared with what Chromium sends following the same redirect itself, in a
# Chromium without robotgate.  Cases a page cannot make: a Cookie header of its own
# (fetch() drops it, and Chromium sends its jar's in place of an extra header's); HEAD or
# PUT as a navigation or a form's; a fetch() to another origin as a table's row (the hop
# turns into a CORS request: a PUT or one with Authorization or the custom header is
# preflighted, and the OPTIONS alone reaches the target, which allows no other origin;
# a simple one goes without the jar's cookies).  The route follows no script's request
# to another origin (the last test here shows what each sends).


@pytest.fixture(scope="module")
def chromiums() -> Iterator[tuple[str, str]]:
    """Two system Chromiums for the module (their DevTools endpoints): one with no
    network but the gate (attach's), one plain, reaching the loopback servers itself."""
    from tests.support.browser import plain_chromium, shared_chromium

    with shared_chromium() as floored, plain_chromium() as plain:
        yield floored, plain


#: The context's cookies, one for each origin: what a hop to it carries.
JAR = {HERE: "jar=here", THERE: "jar=there"}
#: A text/plain form's body: its one field.
FORM_BODY = b"a=b\r\n"
PAGE_HEADERS = {"Authorization": HEADERS["Authorization"], "X-Custom": HEADERS["X-Custom"]}

SUBMIT = """(url) => {
  const form = document.createElement('form');
  form.method = 'POST'; form.action = url; form.enctype = 'text/plain';
  const field = document.createElement('input'); field.name = 'a'; field.value = 'b';
  form.append(field); document.body.append(form); form.submit();
}"""
# Whether the page read the answer (a CORS answer that allows no other origin fails the
# fetch: the request was made all the same).
FETCH = """async ([url, method, body, headers]) => {
  try { await (await fetch(url, {method, body, headers})).arrayBuffer(); return true; }
  catch (e) { return false; }
}"""


@dataclass(frozen=True)
class Way:
    """One way a page makes the table's requests: ``cases`` it can make, whether its
    ``headers`` are the context's extra headers (else fetch's own), and whether Chromium
    sends the jar's cookies to another origin (a navigation's or a form's credentials
    mode, "include"; fetch()'s default, "same-origin", does not)."""

    cases: Sequence[Case]
    extra_headers: bool
    headers: dict[str, str]
    cookies_to_other: bool

    async def send(self, page: Any, url: str, method: str) -> None:
        if self is WAYS["navigation"]:
            await page.goto(url)
        elif self is WAYS["form"]:
            async with page.expect_navigation():
                await page.evaluate(SUBMIT, url)
            await page.goto(url.split("/from/")[0] + "/page")
        else:
            body = BODY.decode() if method in ("POST", "PUT") else None
            await page.evaluate(FETCH, [url, method, body, self.headers])  # its own headers


WAYS = {
    "navigation": Way([Case("GET", status, other) for status in STATUSES
                       for other in (False, True)], True, PAGE_HEADERS, True),
    "form": Way([Case("POST", status, other) for status in STATUSES
                 for other in (False, True)], True, PAGE_HEADERS, True),
    "fetch": Way([Case(method, status, False) for method in METHODS for status in STATUSES],
                 False, PAGE_HEADERS, False),
}


def browser_hop(case: Case, first: Heard, way: Way) -> Heard:
    """What the target hears by the core's rule, for a first hop that heard ``first``: the
    jar's cookie for the target's origin (none to another origin where the request's
    credentials mode keeps cookies on its own)."""
    to = THERE if case.other_origin else HERE
    hop = next_hop(case.status, first.method, f"http://{HERE}:1/", f"http://{to}:1/")
    kept = hop.headers({"Authorization": first.authorization, "X-Custom": first.custom})
    cookie = JAR[to] if way.cookies_to_other or not case.other_origin else None
    return Heard(hop.method, hop.body(first.body) or b"", kept.get("Authorization"),
                 cookie, kept.get("X-Custom"))


def chromium_rule(case: Case, first: Heard, way: Way) -> Heard:
    """What Chromium's own hop sends: the core's rule, but for the context's extra headers,
    which Playwright has Chromium add to every request, a hop to another origin too (the
    Fetch standard takes Authorization off such a hop: the core's rule is the standard's)."""
    ours = browser_hop(case, first, way)
    return ours._replace(authorization=first.authorization) if way.extra_headers else ours


async def browser_table(hosts: Hosts, run: str, context: Any,
                        way: Way) -> tuple[dict[Case, Heard], dict[Case, Heard]]:
    """``way``'s cases made by a page of ``context``: what each first hop and each
    target heard."""
    await context.add_cookies([
        {"name": "jar", "value": cookie.split("=")[1], "url": hosts.url(host, "/")}
        for host, cookie in JAR.items()])
    if way.extra_headers:
        await context.set_extra_http_headers(way.headers)
    page = await context.new_page()
    await page.goto(hosts.url(HERE, "/page"))
    for case in way.cases:
        await asyncio.wait_for(way.send(page, hosts.start(case, run), case.method),
                               10)  # a hang guard
    await page.close()
    first = {case: hosts.sent.get(f"{run}/{case.name}") for case in way.cases}
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in way.cases}
    missing = [case.name for case in way.cases if first[case] is None or heard[case] is None]
    assert not missing, f"{run}: no hop reached the target for {missing}"
    return ({case: got for case, got in first.items() if got is not None},
            {case: got for case, got in heard.items() if got is not None})


@pytest.mark.parametrize("way", list(WAYS))
async def test_the_browser_route_follows_by_the_cores_rule(
        hosts: Hosts, chromiums: tuple[str, str], way: str) -> None:
    from playwright.async_api import async_playwright

    from robotgate.integrations.playwright import attach

    made = WAYS[way]
    floored, plain = chromiums
    async with async_playwright() as playwright, open_gate() as gate:
        own = await (await playwright.chromium.connect_over_cdp(plain)).new_context()
        ours = await (await playwright.chromium.connect_over_cdp(floored)).new_context(
            service_workers="block")
        try:
            own_first, own_heard = await browser_table(hosts, f"{way}-chromium", own, made)
            attachment = await attach(gate, ours)
            first, heard = await browser_table(hosts, f"{way}-gate", ours, made)
            await attachment.detach()
        finally:
            await own.close()
            await ours.close()
    body = {"form": FORM_BODY}.get(way, BODY)
    for case in made.cases:  # the page made the case the table names
        sent_body = body if case.method in ("POST", "PUT") else b""
        assert own_first[case] == Heard(case.method, sent_body, made.headers.get(
            "Authorization"), JAR[HERE], made.headers.get("X-Custom")), case
    # Chromium's own hop, as the rule says; then the route's, by the core's rule.
    assert {case.name: (got, chromium_rule(case, own_first[case], made))
            for case, got in own_heard.items()
            if got != chromium_rule(case, own_first[case], made)} == {}
    # The route's first hop is the page's request as Chromium sends it, cookies once.
    assert {case.name: got for case, got in first.items() if got != own_first[case]} == {}
    assert {case.name: (got, browser_hop(case, first[case], made))
            for case, got in heard.items() if got != browser_hop(case, first[case], made)} == {}


async def test_a_scripts_request_redirected_to_another_origin_is_not_followed(
        hosts: Hosts, chromiums: tuple[str, str]) -> None:
    """A page's fetch() redirected to another origin: Chromium makes it a CORS request
    there (a simple one sent without the jar's cookies, fetch()'s credentials mode being
    "same-origin"; a PUT or one with headers of its own preflighted, the OPTIONS alone
    sent, the target allowing no other origin), and the page cannot read the answer.
    The route, which would hand the page the other origin's answer as its first URL's,
    follows no such hop: the first hop is sent, the target hears nothing, the fetch
    fails.  (Before, the route sent every such hop, the other origin's cookies with it,
    and the page read the answer.)"""
    from playwright.async_api import async_playwright

    from robotgate.integrations.playwright import attach

    cases = [Case(method, status, True) for method in METHODS for status in STATUSES]

    async def run(context: Any, name: str) -> dict[Case, bool]:
        await context.add_cookies([
            {"name": "jar", "value": cookie.split("=")[1], "url": hosts.url(host, "/")}
            for host, cookie in JAR.items()])
        page = await context.new_page()
        await page.goto(hosts.url(HERE, "/page"))
        read = {}
        for case in cases:
            body = BODY.decode() if case.method in ("POST", "PUT") else None
            headers = PAGE_HEADERS if case.method == "PUT" else {}  # PUT: preflighted
            read[case] = await asyncio.wait_for(page.evaluate(FETCH, [
                hosts.start(case, name), case.method, body, headers]), 10)  # a hang guard
        await page.close()
        return read

    async with async_playwright() as playwright, open_gate() as gate:
        own = await (await playwright.chromium.connect_over_cdp(chromiums[1])).new_context()
        ours = await (await playwright.chromium.connect_over_cdp(chromiums[0])).new_context(
            service_workers="block")
        try:
            own_read = await run(own, "cross-chromium")
            attachment = await attach(gate, ours)
            read = await run(ours, "cross-gate")
            await attachment.detach()
        finally:
            await own.close()
            await ours.close()
    for case in cases:
        first = hosts.sent[f"cross-chromium/{case.name}"]
        assert hosts.sent[f"cross-gate/{case.name}"] == first, case  # the first hop alike
        if case.method == "PUT":
            expected = Heard("OPTIONS", b"", None, None, None)  # the preflight alone
        else:
            expected = browser_hop(case, first, WAYS["fetch"])._replace(cookie=None)
        assert hosts.heard[f"cross-chromium/{case.name}"] == expected, case
    assert [case.name for case in cases if f"cross-gate/{case.name}" in hosts.heard] == []
    assert not any(own_read.values()) and not any(read.values())


# -- crawlee: credentials in its own forms, as its own client alone sends them ----------

#: crawlee's forms: an Authorization header of the request's, a URL's userinfo.
CRAWLEE_CREDENTIAL_FORMS = ("headers", "userinfo")


async def crawlee_credentials(hosts: Hosts, form: str, client: Any, run: str, path: str
                              ) -> dict[Case, str | None]:
    """What each target heard, each case sent by ``client``'s ``send_request`` or, as a
    crawler sends a page, its ``crawl`` (the headers the Request's own)."""
    from crawlee import Request

    headers = {"Authorization": BASIC} if form == "headers" else {}
    for case in CREDENTIAL_CASES:
        url = with_userinfo(hosts.start(case, run), form)
        if path == "crawl":
            sent = client.crawl(Request.from_url(url, headers=headers))
        else:
            sent = client.send_request(url, headers=headers)
        await asyncio.wait_for(sent, 10)  # a hang guard
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in CREDENTIAL_CASES}
    assert all(got is not None for got in heard.values()), f"{run}: a hop went nowhere"
    first = [hosts.sent[f"{run}/{case.name}"].authorization for case in CREDENTIAL_CASES]
    assert first == [BASIC, BASIC], f"{run}: the first request went without its credentials"
    return {case: got.authorization for case, got in heard.items() if got is not None}


@pytest.mark.parametrize("path", ["send_request", "crawl"])
@pytest.mark.parametrize("form", CRAWLEE_CREDENTIAL_FORMS)
async def test_crawlees_client_sends_credentials_as_crawlee_alone(
        hosts: Hosts, form: str, path: str) -> None:
    """crawlee 1.11's own client (impit) sends a request's Authorization again on a hop
    within the origin and drops it on a hop to another (the core's rule); a URL's
    userinfo it sends on the first request alone (the Location names none), stricter
    than the core's rule.  Through ``RobotGateHttpClient``: the same."""
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    from crawlee.http_clients import ImpitHttpClient

    from robotgate.integrations.crawlee import RobotGateHttpClient

    run = f"crawlee-cred-{form}-{path}"
    async with ImpitHttpClient(follow_redirects=True) as plain:
        alone = await crawlee_credentials(hosts, form, plain, run, path)
    async with open_gate() as gate, RobotGateHttpClient(gate) as client:
        gated = await crawlee_credentials(hosts, form, client, f"{run}-gate", path)
    assert gated == alone
    assert alone == {case: None if form == "userinfo" else credential_rule(case)
                     for case in CREDENTIAL_CASES}


#: crawlee's clients made with credentials of their own: (the client, its arguments).
CRAWLEE_CLIENT_CREDENTIALS: dict[str, tuple[str, dict[str, Any]]] = {
    "httpx-cookies": ("HttpxHttpClient", {"cookies": {"sid": "42"}}),
    "httpx-headers": ("HttpxHttpClient", {"headers": {"Authorization": BASIC,
                                                      "Cookie": "sid=42"}}),
    "httpx-auth": ("HttpxHttpClient", {"auth": ("user", "pass")}),
    "impit-cookies": ("ImpitHttpClient", {"cookies": httpx.Cookies({"sid": "42"})}),
    "impit-headers": ("ImpitHttpClient", {"headers": {"Authorization": BASIC,
                                                      "Cookie": "sid=42"}}),
}


async def crawlee_own_credentials(hosts: Hosts, client: Any, run: str, path: str
                                  ) -> dict[Case, tuple[str | None, str | None]]:
    """The Authorization and Cookie each target heard, each case sent by ``client`` (its
    ``send_request`` or ``crawl``) with no credentials of the call's."""
    from crawlee import Request

    for case in CREDENTIAL_CASES:
        url = hosts.start(case, run)
        sent = client.crawl(Request.from_url(url)) if path == "crawl" else client.send_request(url)
        await asyncio.wait_for(sent, 10)  # a hang guard
    heard = {case: hosts.heard.get(f"{run}/{case.name}") for case in CREDENTIAL_CASES}
    assert all(got is not None for got in heard.values()), f"{run}: a hop went nowhere"
    return {case: (got.authorization, got.cookie) for case, got in heard.items()
            if got is not None}


@pytest.mark.parametrize("path", ["send_request", "crawl"])
@pytest.mark.parametrize("form", list(CRAWLEE_CLIENT_CREDENTIALS))
async def test_crawlees_clients_own_credentials_stay_on_their_origin(
        hosts: Hosts, form: str, path: str) -> None:
    """A crawlee client made with credentials of its own (httpx's ``auth=``, ``cookies=``,
    credential ``headers=``; impit's ``cookies=`` and ``headers=``) as
    ``RobotGateHttpClient``'s inner: they go with the first request and a hop within its
    origin, and not to another origin (each hop is a request of the inner client, which
    would add them again).  httpx alone drops them there too; impit alone sends them to
    any origin (it adds them to each of crawlee's hops): the one difference, asserted
    as such."""
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    import crawlee.http_clients

    from robotgate.integrations.crawlee import RobotGateHttpClient

    name, kwargs = CRAWLEE_CLIENT_CREDENTIALS[form]
    kind = getattr(crawlee.http_clients, name)
    run = f"crawlee-own-{form}-{path}"
    async with kind(**kwargs) as plain:
        alone = await crawlee_own_credentials(hosts, plain, run, path)
    async with open_gate() as gate, RobotGateHttpClient(
            gate, kind(follow_redirects=False, **kwargs)) as client:
        gated = await crawlee_own_credentials(hosts, client, f"{run}-gate", path)
    given = (BASIC if form.endswith(("headers", "auth")) else None,
             "sid=42" if form.endswith(("headers", "cookies")) else None)
    same, other = CREDENTIAL_CASES
    assert gated == {same: given, other: (None, None)}
    assert alone == {same: given, other: given if form.startswith("impit") else (None, None)}


# -- the browser: credentials in Playwright's forms, as Chromium alone sends them ---------
#
# A navigation redirected (302) within its origin and to another.  Forms: the context's
# extra headers (Authorization), its ``http_credentials`` (for any origin, for the first
# origin only, and with ``send: "always"``), a URL's userinfo.  Every request without
# Authorization is asked for it (401 Basic), as a browser sends http_credentials and a
# URL's userinfo only when asked.  The route is Chromium alone but for the one rule:
# where Chromium sends the credentials to another origin unasked (the context's extra
# headers go on every request), the route does not.

BROWSER_CREDENTIAL_FORMS = ("extra-headers", "http-credentials", "http-credentials-origin",
                            "http-credentials-always", "userinfo")


async def browser_context(hosts: Hosts, form: str, browser: Any) -> Any:
    """A context of ``browser`` with ``form``'s credentials (but a URL's userinfo)."""
    options: dict[str, Any] = {}
    if form.startswith("http-credentials"):
        options["http_credentials"] = {"username": "user", "password": "pass"}
        if form == "http-credentials-origin":
            options["http_credentials"]["origin"] = hosts.url(HERE, "")
        if form == "http-credentials-always":
            options["http_credentials"]["send"] = "always"
    context = await browser.new_context(service_workers="block", **options)
    if form == "extra-headers":
        await context.set_extra_http_headers({"Authorization": BASIC})
    return context


def credentials_heard(hosts: Hosts, run: str) -> dict[Case, tuple[str | None, str | None]]:
    """Each credential case of ``run``: the Authorization its first hop and its target last
    heard (None for the target: the first hop was not followed, e.g. its 401 unanswered)."""
    heard = {}
    for case in CREDENTIAL_CASES:
        first, last = hosts.sent.get(f"{run}/{case.name}"), hosts.heard.get(f"{run}/{case.name}")
        assert first is not None, f"{run}: {case.name} went nowhere"
        heard[case] = (first.authorization, last and last.authorization)
    return heard


async def browser_navigations(hosts: Hosts, form: str, context: Any, run: str
                              ) -> dict[Case, tuple[str | None, str | None]]:
    """Each case navigated by a page of ``context``: the Authorization the first hop
    and the target last heard."""
    from playwright.async_api import Error as PlaywrightError

    page = await context.new_page()
    for case in CREDENTIAL_CASES:
        url = hosts.start(case, run)
        with contextlib.suppress(PlaywrightError):  # a 401 unanswered fails the navigation
            await asyncio.wait_for(page.goto(url.replace("http://", "http://user:pass@")
                                             if form == "userinfo" else url), 10)  # a hang guard
    await page.close()
    return credentials_heard(hosts, run)


@pytest.mark.parametrize("form", BROWSER_CREDENTIAL_FORMS)
async def test_the_browser_route_sends_credentials_as_chromium_alone(
        hosts: Hosts, chromiums: tuple[str, str], form: str) -> None:
    """Chromium 156 alone: the context's extra headers on every hop (to another origin
    too); http_credentials answer a challenge of any origin, or of their ``origin`` alone
    (with ``send: "always"`` the route sends them unasked, as Playwright's request client
    did: what each target hears is the same); a URL's
    userinfo answers its own origin's challenges, the hop within it too.  The route: the
    same, but for the extra headers, which it keeps off the hop to another origin.
    (Before, the route answered no challenge with a URL's userinfo.)"""
    from playwright.async_api import async_playwright

    from robotgate.integrations.playwright import attach

    floored, plain = chromiums
    run = f"{CHALLENGE}browser-{form}"
    async with async_playwright() as playwright, open_gate() as gate:
        own = await browser_context(
            hosts, form, await playwright.chromium.connect_over_cdp(plain))
        ours = await browser_context(
            hosts, form, await playwright.chromium.connect_over_cdp(floored))
        try:
            alone = await browser_navigations(hosts, form, own, run)
            attachment = await attach(gate, ours)
            gated = await browser_navigations(hosts, form, ours, f"{run}-gate")
            await attachment.detach()
        finally:
            await own.close()
            await ours.close()
    expected = dict(alone)
    other = Case("GET", 302, True)
    if alone[other][1] is not None and form == "extra-headers":
        expected[other] = (alone[other][0], None)  # the one rule: not to another origin unasked
    assert gated == expected, alone


# -- crawlee's PlaywrightCrawler: its navigations as its crawler alone sends them ----------

#: The forms a PlaywrightCrawler's user gives credentials in: the context's
#: ``http_credentials`` or extra headers (``browser_new_context_options``), a URL's userinfo.
CRAWLER_CREDENTIAL_FORMS = ("http-credentials", "extra-headers", "userinfo")


async def playwright_crawler_credentials(hosts: Hosts, form: str, run: str, gate: Any,
                                         profile: Path) -> dict[Case, tuple[str | None,
                                                                            str | None]]:
    """Each case crawled by a PlaywrightCrawler (through ``gate``, or alone): the
    Authorization its first hop and its target last heard (None: not reached)."""
    from crawlee import ConcurrencySettings, Request
    from crawlee.crawlers import PlaywrightCrawler, PlaywrightCrawlingContext
    from crawlee.storage_clients import MemoryStorageClient

    from robotgate.integrations.crawlee import RobotGateHttpClient
    from robotgate.integrations.playwright import LAUNCH_ARGS, preloading_off
    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    context_options: dict[str, Any] = {"service_workers": "block"}
    if form == "http-credentials":
        context_options["http_credentials"] = {"username": "user", "password": "pass"}
    if form == "extra-headers":
        context_options["extra_http_headers"] = {"Authorization": BASIC}
    client = RobotGateHttpClient(gate) if gate is not None else None
    extra: dict[str, Any] = {"http_client": client} if client is not None else {}
    crawler = PlaywrightCrawler(
        storage_client=MemoryStorageClient(), headless=True,
        user_data_dir=preloading_off(str(profile)), use_incognito_pages=False,
        browser_launch_options={"executable_path": chromium_path(), "args": [
            *CHROMIUM_ARGS, *(LAUNCH_ARGS if client is not None else ())]},
        browser_new_context_options=context_options,
        # browserforge's fingerprinted context replaces the extra headers given, and its
        # handler of each new page fails once the context closes: the options as given.
        fingerprint_generator=None,
        concurrency_settings=ConcurrencySettings(desired_concurrency=1, max_concurrency=1),
        max_request_retries=0, max_session_rotations=0, configure_logging=False, **extra)
    if client is not None:
        client.attach(crawler)

    @crawler.router.default_handler
    async def handler(context: PlaywrightCrawlingContext) -> None:
        """Nothing to do: the servers record what they heard."""

    await asyncio.wait_for(crawler.run([
        Request.from_url(with_userinfo(hosts.start(case, run), form))
        for case in CREDENTIAL_CASES]), 60)  # a hang guard
    return credentials_heard(hosts, run)


@pytest.mark.parametrize("form", CRAWLER_CREDENTIAL_FORMS)
async def test_crawlees_playwright_crawler_sends_credentials_as_alone(
        hosts: Hosts, form: str, tmp_path: Path) -> None:
    """crawlee's PlaywrightCrawler alone (Chromium sends its navigations) against the
    same crawler with ``RobotGateHttpClient.attach`` (the client sends them): the same
    Authorization at each hop, but for the one rule (credentials Chromium sends to
    another origin unasked, the context's extra headers, do not go there)."""
    pytest.importorskip("crawlee", reason="crawlee is not installed")
    pytest.importorskip("browserforge", reason="crawlee's playwright extra is not installed")
    run = f"{CHALLENGE}crawler-{form}"
    alone = await playwright_crawler_credentials(hosts, form, run, None, tmp_path / "alone")
    async with open_gate() as gate:
        gated = await playwright_crawler_credentials(hosts, form, f"{run}-gate", gate,
                                                     tmp_path / "gated")
    expected = dict(alone)
    other = Case("GET", 302, True)
    if form == "extra-headers" and alone[other][1] is not None:
        expected[other] = (alone[other][0], None)  # the one rule: not to another origin unasked
    assert gated == expected, alone
