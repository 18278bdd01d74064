"""The cookie contract of the browser through the gate: Chromium alone against Chromium
under ``attach``, the same pages, the same steps; what each server receives (the Cookie
header) and what the context holds (``context.cookies()``) must be the same.

One loopback server plays every site, by the Host header, and is the proxy both browsers
reach them through (Chromium alone: its launch's proxy; under the gate: ``attach(...,
proxy=...)``): ``a.example.com`` and ``b.example.com`` (one site), ``x.co.uk`` (a site
under a public suffix of two labels), ``127.0.0.1`` and ``127.0.0.2`` (addresses: two
sites, each a trustworthy origin on http, where ``Secure`` may be set).  The gate's
look-ups of the names answer 127.0.0.x (``socket.getaddrinfo`` patched); every address
plays a public one.

Each row sets cookies with ``Set-Cookie`` on the answer to the URL the browser asked for
(Chromium decides: the route hands it the headers), and again on a redirect's hop (the
route follows it and Chromium never sees it: the route's own rules decide), then
makes requests that show which cookies go where.  Not compared: ``Sec-Fetch-*`` (the
route's requests carry none: Chromium adds them past the route, and the route is not
handed them), and the order of the cookies in a header.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, quote

import pytest
from aiohttp import web

from robotgate import RobotGate

pytest.importorskip("playwright.async_api", reason="Playwright is not installed "
                    "(pip install 'robotgate[playwright]')")


pytestmark = pytest.mark.slow

A, B, X = "a.example.com", "b.example.com", "x.co.uk"
I1, I2 = "127.0.0.1", "127.0.0.2"
SITES = (A, B, X, I1, I2)
#: The names the gate's look-ups answer (the browsers reach every site through the proxy).
NAMES = {A: "127.0.0.3", B: "127.0.0.4", X: "127.0.0.5"}


def url(host: str, path: str) -> str:
    return f"http://{host}{path}"


def setting(path: str, *cookies: str) -> str:
    """``path`` answered with these ``Set-Cookie`` headers."""
    return path + "?" + "&".join("c=" + quote(cookie, safe="") for cookie in cookies)


def hop(host: str, to: str, *cookies: str) -> str:
    """A redirect (302) on ``host`` to ``to``, answered with these ``Set-Cookie``s."""
    return url(host, setting("/redirect", *cookies) + "&to=" + quote(to, safe=""))


class Heard(NamedTuple):
    host: str
    path: str
    cookie: tuple[str, ...]


@dataclass
class Sites:
    """The one server (``port``): every site; and the proxy to them (``proxy_port``),
    which forwards every request and tunnel (Playwright's request client tunnels every
    URL) to it."""

    port: int = 0
    proxy_port: int = 0
    heard: dict[str, list[Heard]] = field(default_factory=dict)
    run: str = ""

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    async def forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            to_reader, to_writer = await asyncio.open_connection("127.0.0.1", self.port)
            if head.startswith(b"CONNECT "):
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                to_writer.write(head)
            await asyncio.gather(_pipe(reader, to_writer), _pipe(to_reader, writer))
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        for _ in range(1 << 20):  # bounded: a chunk each
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def serve(found: Sites, ready: threading.Event, stop: asyncio.Event) -> None:
    """The sites and the proxy, until ``stop``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0]
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/favicon.ico" or host not in SITES:
            raise web.HTTPNotFound()  # a browser's own (the plain one's update check)
        cookie = tuple(sorted(part.strip() for part in
                              request.headers.get("Cookie", "").split(";") if part.strip()))
        found.heard.setdefault(found.run, []).append(Heard(host, request.path, cookie))
        query = parse_qs(request.query_string, keep_blank_values=True)
        headers = [("Set-Cookie", value) for value in query.get("c", [])]
        if request.path == "/redirect":
            headers.append(("Location", query["to"][0]))
            return web.Response(status=302, headers=headers)
        response = web.Response(text="<html><body>page</body></html>",
                                content_type="text/html")
        for name, value in headers:
            response.headers.add(name, value)
        return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.port = runner.addresses[0][1]
    proxy = await asyncio.start_server(found.forward, "127.0.0.1", 0)
    found.proxy_port = proxy.sockets[0].getsockname()[1]
    ready.set()
    try:
        await stop.wait()
    finally:
        proxy.close()
        await runner.cleanup()


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    """The sites and their proxy, for the module, in a thread of their own (the
    browsers, started once, are given the proxy's port)."""
    found, ready = Sites(), threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(target=loop.run_until_complete,
                              args=(serve(found, ready, stop),), daemon=True)
    thread.start()
    assert ready.wait(30), "the sites did not start"
    try:
        yield found
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


@pytest.fixture(scope="module")
def chromiums(sites: Sites) -> Iterator[tuple[str, str]]:
    """Two system Chromiums (their DevTools endpoints): one with no network but the
    gate, one reaching the sites itself through their proxy."""
    from robotgate.integrations.playwright import BLACK_HOLE, LAUNCH_ARGS, preloading_off
    from tests.support.browser import _devtools_chromium

    # Both on http as asked (Chromium would try a name's https first: the HTTPS upgrade,
    # whose fallback a refusal does not take).
    http = "--disable-features=HttpsUpgrades"
    with tempfile.TemporaryDirectory() as where, _devtools_chromium(
            preloading_off(Path(where) / "floored"), f"--proxy-server={BLACK_HOLE}",
            *LAUNCH_ARGS, "--enable-automation", http) as floored, _devtools_chromium(
            Path(where) / "plain", f"--proxy-server={sites.proxy}",
            "--proxy-bypass-list=<-loopback>", http) as plain:
        yield floored, plain


@pytest.fixture
def gate_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's look-ups (``socket.getaddrinfo``) answer :data:`NAMES`."""
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in NAMES:
            return system(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (NAMES[name], int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


# -- the rows: each a list of steps, run in a new context of each browser -----------------
#
# A step: ("goto", url), or ("js", url of the page to run it on, script): the script's
# value is recorded.  Each row's Set-Cookie cases run twice: on the answer to the URL
# asked for ("direct"), and on a redirect's hop to it ("hop").

SET_ROWS: dict[str, tuple[str, list[str], list[str]]] = {
    # name: (host, Set-Cookie values, the URLs visited after)
    "domain-host": (A, ["d=1; Domain=a.example.com"], [url(A, "/e"), url(B, "/e")]),
    "domain-parent": (A, ["d=1; Domain=example.com", "e=1; Domain=.example.com"],
                      [url(A, "/e"), url(B, "/e")]),
    "domain-other-host": (A, ["d=1; Domain=b.example.com"], [url(B, "/e")]),
    "domain-ip": (I1, ["own=1; Domain=127.0.0.1", "planted=EVIL; Domain=127.0.0.2",
                       "part=1; Domain=0.0.1"], [url(I1, "/e"), url(I2, "/e")]),
    "domain-ip-from-name": (A, ["d=1; Domain=127.0.0.3"], [url(I1, "/e")]),
    "domain-com": (A, ["tld=EVIL2; Domain=com", "own=1"], [url(B, "/e")]),
    "domain-co-uk": (X, ["tld=EVIL3; Domain=co.uk", "uk=1; Domain=uk"], [url(X, "/e")]),
    "path": (A, ["p=1; Path=/dir", "q=1; Path=/dir/sub", "r=1; Path=nothing"],
             [url(A, "/dir"), url(A, "/dir/sub/x"), url(A, "/directory"), url(A, "/")]),
    "secure-on-http-name": (A, ["s=1; Secure", "t=1"], [url(A, "/e")]),
    "secure-on-loopback": (I1, ["s=1; Secure"], [url(I1, "/e")]),
    "httponly": (A, ["h=1; HttpOnly", "v=1"], [url(A, "/e")]),
    "prefixes-name": (A, ["__Host-a=1; Secure; Path=/", "__Secure-b=1; Secure",
                          "__Host-c=1", "__Secure-d=1"], [url(A, "/e")]),
    "prefixes-loopback": (I1, ["__Host-a=1; Secure; Path=/", "__Host-b=1; Secure",
                               "__Host-c=1; Secure; Path=/; Domain=127.0.0.1",
                               "__Secure-d=1; Secure", "__Secure-e=1", "__host-f=1"],
                          [url(I1, "/e")]),
    "samesite-none-without-secure": (I1, ["n=1; SameSite=None", "m=1; SameSite=None; Secure",
                                          "o=1; SameSite=Bogus"], [url(I1, "/e")]),
    "max-age-zero": (A, ["gone=; Max-Age=0", "old=; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
                         "kept=1; Max-Age=3600"], [url(A, "/e")]),
}

DOCUMENT_COOKIE = "() => document.cookie"


def set_row(name: str, way: str) -> list[tuple[str, ...]]:
    host, cookies, visits = SET_ROWS[name]
    first: list[tuple[str, ...]] = []
    if name == "max-age-zero":  # cookies to delete, first
        first = [("goto", url(host, setting("/before", "gone=1", "old=1")))]
    target = (url(host, setting("/set", *cookies)) if way == "direct"
              else hop(host, url(host, "/landed"), *cookies))
    return [*first, ("goto", target), ("js", "", DOCUMENT_COOKIE),
            *(("goto", visit) for visit in visits)]


#: SameSite: cookies of each kind on the target site, then requests to it from a page of
#: the same site or another, as a navigation, a subresource and a fetch.
def same_site_row(target: str, page: str, secure: bool) -> list[tuple[str, ...]]:
    kinds = ["strict=1; SameSite=Strict", "lax=1; SameSite=Lax", "plain=1"]
    if secure:
        kinds.append("none=1; SameSite=None; Secure")
    return [
        ("goto", url(target, setting("/set", *kinds))),
        ("goto", url(page, "/page")),
        ("js", "", f"""async () => {{
            const img = new Image(); img.src = '{url(target, "/img")}';
            await new Promise(r => {{ img.onload = img.onerror = r; }});
            await fetch('{url(target, "/fetch-include")}',
                        {{mode: 'no-cors', credentials: 'include'}}).catch(() => 0);
            await fetch('{url(target, "/fetch-default")}', {{mode: 'no-cors'}}).catch(() => 0);
            return 'ok'; }}"""),
        ("click", url(target, "/nav")),
        ("goto", url(page, "/page")),
        ("submit", url(target, "/post")),
        ("goto", url(page, "/page")),
        ("js", "", f"""async () => {{
            const frame = document.createElement('iframe'); frame.src = '{url(target, "/frame")}';
            document.body.append(frame);
            await new Promise(r => {{ frame.onload = r; }}); return 'ok'; }}"""),
    ]


def credentials_row(target: str) -> list[tuple[str, ...]]:
    return [
        ("goto", url(target, setting("/set", "c=1", "l=1; SameSite=Lax"))),
        ("goto", url(I1, "/page")),
        ("js", "", f"""async () => {{
            for (const mode of ['omit', 'same-origin', 'include'])
              await fetch('{url(target, "/f-")}' + mode,
                          {{mode: 'no-cors', credentials: mode}}).catch(() => 0);
            return 'ok'; }}"""),
    ]


ROWS: dict[str, list[tuple[str, ...]]] = {
    **{f"{name}-{way}": set_row(name, way) for name in SET_ROWS for way in ("direct", "hop")},
    "samesite-same-site-names": same_site_row(B, A, secure=False),
    "samesite-cross-site-names": same_site_row(B, X, secure=False),
    "samesite-same-origin-loopback": same_site_row(I1, I1, secure=True),
    "samesite-cross-site-loopback": same_site_row(I1, I2, secure=True),
    "credentials-same-origin": credentials_row(I1),
    "credentials-cross-site": credentials_row(I2),
    "document-cookie": [
        ("goto", url(A, "/page")),
        ("js", "", "() => { document.cookie = 'j=1; path=/'; "
                   "document.cookie = 'k=1; domain=com'; "
                   "document.cookie = 'l=1; domain=example.com'; return document.cookie; }"),
        ("js", "", f"() => fetch('{url(A, '/after-js')}').then(() => 'ok')"),
        ("goto", url(B, "/e")),
    ],
    "redirect-hop-carries-the-jars-cookies": [
        ("goto", url(I2, setting("/set", "strict=1; SameSite=Strict", "lax=1; SameSite=Lax",
                                 "none=1; SameSite=None; Secure"))),
        ("goto", url(I1, setting("/set", "here=1"))),
        # A navigation of a page on I1 through I1's redirect to I2: a cross-site chain.
        ("click", hop(I1, url(I2, "/landed"))),
        ("goto", url(I1, "/page")),
        ("js", "", f"""async () => {{
            const img = new Image(); img.src = '{hop(I1, url(I2, "/img-landed"))}';
            await new Promise(r => {{ img.onload = img.onerror = r; }});
            const same = new Image(); same.src = '{hop(I2, url(I2, "/img-same"))}';
            await new Promise(r => {{ same.onload = same.onerror = r; }});
            await fetch('{hop(I1, url(I1, "/fetch-landed"))}', {{credentials: 'omit'}});
            await fetch('{hop(I1, url(I1, "/fetch-default"))}');
            return 'ok'; }}"""),
    ],
    "redirect-hop-sets-for-its-own-url": [
        ("goto", hop(I1, url(I2, "/landed"), "hop=1", "planted=EVIL; Domain=127.0.0.2")),
        ("goto", url(I1, "/e")),
        ("goto", url(I2, "/e")),
    ],
    "redirect-hop-cross-site-subresource-sets": [
        ("goto", url(I1, "/page")),
        ("js", "", f"""async () => {{
            const img = new Image();
            img.src = '{hop(I2, url(I1, "/img-landed"), "third=1", "lax=1; SameSite=Lax",
                             "none=1; SameSite=None; Secure")}';
            await new Promise(r => {{ img.onload = img.onerror = r; }}); return 'ok'; }}"""),
        ("goto", url(I2, "/e")),
    ],
}


async def run_row(context: Any, steps: list[tuple[str, ...]]) -> list[Any]:
    """The row's steps in a new page of ``context``: the scripts' values."""
    page = await context.new_page()
    try:
        return await run_steps(page, steps)
    finally:
        await page.close()


async def run_steps(page: Any, steps: list[tuple[str, ...]]) -> list[Any]:
    """The row's steps on ``page``: the scripts' values."""
    values: list[Any] = []
    for step in steps:
        kind, where = step[0], step[1]
        if kind == "goto":
            await page.goto(where)
        elif kind == "js":
            values.append(await page.evaluate(step[2]))
        elif kind == "click":  # a link the page's user follows: a navigation it makes
            async with page.expect_navigation():
                await page.evaluate("""(u) => { const a = document.createElement('a');
                    a.href = u; document.body.append(a); a.click(); }""", where)
        elif kind == "submit":  # a form POSTed from the page
            async with page.expect_navigation():
                await page.evaluate("""(u) => { const f = document.createElement('form');
                    f.method = 'POST'; f.action = u; document.body.append(f);
                    f.submit(); }""", where)
    return values


def jar(cookies: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((c["name"], c["value"], c["domain"], c["path"], c["secure"], c["httpOnly"],
                   c["sameSite"], c["expires"] == -1) for c in cookies)


@dataclass
class Outcome:
    heard: list[Heard]
    values: list[Any]
    cookies: list[tuple[Any, ...]]


async def run_in(browser: Any, sites: Sites, run: str, steps: list[tuple[str, ...]],
                 gate: RobotGate | None) -> Outcome:
    """``steps`` in a new context of ``browser`` (attached to ``gate`` if given)."""
    from robotgate.integrations.playwright import attach

    sites.run = run
    if gate is None:
        context = await browser.new_context()
    else:
        context = await browser.new_context(service_workers="block")
        await attach(gate, context, proxy={"server": sites.proxy})
    try:
        try:
            values = await asyncio.wait_for(run_row(context, steps), 30)
        except TimeoutError:
            raise AssertionError(f"{run}: hung") from None
        await asyncio.sleep(0.1)  # a request the last step started
        cookies = jar(await context.cookies())
    finally:
        await context.close()
    return Outcome(sorted(sites.heard.get(run, [])), values, cookies)


def less_than_chromium(row: str, heard: Heard) -> Heard:
    """What the gate sends where it sends less than Chromium, on purpose: a script's
    request to another origin of the same site with ``credentials: "include"`` carries
    no cookie (the route cannot tell that mode from the default, "same-origin", in
    which Chromium sends none)."""
    if row == "samesite-same-site-names" and heard.path == "/fetch-include":
        return heard._replace(cookie=())
    return heard


async def chromium_alone(sites: Sites, plain: str, row: str) -> Outcome:
    """The row in Chromium alone (``plain``: its DevTools endpoint), as the gate is to
    give it (but for what it sends less on purpose)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        own = await run_in(await playwright.chromium.connect_over_cdp(plain), sites,
                           f"chromium/{row}", ROWS[row], None)
    return Outcome(sorted(less_than_chromium(row, heard) for heard in own.heard),
                   own.values, own.cookies)


@pytest.mark.parametrize("row", list(ROWS))
async def test_the_browser_keeps_cookies_as_chromium_alone(
        sites: Sites, chromiums: tuple[str, str], gate_names: None, row: str) -> None:
    from playwright.async_api import async_playwright

    floored, plain = chromiums
    async with async_playwright() as playwright, RobotGate(
            "CookieBot/1.0", delay=0, is_private=lambda address: False) as gate:
        own = await run_in(await playwright.chromium.connect_over_cdp(plain), sites,
                           f"chromium/{row}", ROWS[row], None)
        ours = await run_in(await playwright.chromium.connect_over_cdp(floored), sites,
                            f"gate/{row}", ROWS[row], gate)
    expected = Outcome(sorted(less_than_chromium(row, heard) for heard in own.heard),
                       own.values, own.cookies)
    assert ours == expected, f"{row}:\n  gate     {ours}\n  chromium {own}"
    # The cookies: Chromium alone keeps neither (nor does the route now).
    assert not any(cookie[0] in ("planted", "tld") for cookie in own.cookies), own
