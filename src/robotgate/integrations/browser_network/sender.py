"""The route's request client: the browser's requests, sent by the gate's own HTTP
client (aiohttp), each answer's body read within a limit (``attach(..., max_bytes=...)``,
as ``gate.fetch`` reads it) before the browser is handed it.

Playwright's request client, which the route used before, reads a whole body into its
driver before Python sees a header: a 256 MiB answer ran the driver out of memory and
ended every page of the crawl.  This client keeps what that one did on the route's path:
``attach``'s proxy (and its ``bypass``), the context's ``ignore_https_errors``, an
``https`` pointer sent to the address its check found with the TLS server name the
host's, the context's HTTP credentials (or the first URL's user information, within its
origin) to answer a ``401`` Basic challenge with (:meth:`RouteClient.challenge_answer`:
the exchange sends the answer in a turn of its own), decoded bodies,
no cookie of its own (the context's jar is the one jar), no redirect followed (the
exchange follows them, hop by hop)."""

from __future__ import annotations

import ssl
from base64 import b64encode
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDictProxy
from playwright.async_api import BrowserContext, ProxySettings
from yarl import URL

from ...errors import BodyTooLarge
from ...gate.aiohttp_bodies import MAX_BODY, read_body
from ...gate.aiohttp_fetch import check_slot, without_resends
from ...gate.connections import RequestTrace
from ...policy.hops import Address
from ...politeness.permits import Permit
from .._follow import pinned
from .floor import UnsafeBrowser, _made_with, via

__all__ = ["MAX_BODY", "RouteClient", "route_client"]

#: How long one request may take, its body read included (Playwright's request
#: client's default, which the route had before).
TIMEOUT = 30.0
# The codings aiohttp decodes (it asks for these alone: the browser's Accept-Encoding is
# not sent); an answer in one of them reaches the browser decoded, without the header.
_DECODED = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd"})
#: What a BodyTooLarge of the route names as the limit.
_HINT = "(attach(..., max_bytes=...)); the browser was not handed it"
# Headers that describe the bytes on the wire, not the body handed to the browser.
_WIRE = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


class RouteClient:
    """The browser's requests' client for one attachment: an aiohttp session of its
    own (no cookie jar, no resend, no redirect), through ``proxy``; bodies read within
    ``max_bytes`` decoded bytes (None: no limit)."""

    def __init__(self, proxy: ProxySettings | None, *, ignore_https_errors: bool,
                 credentials: object, max_bytes: int | None) -> None:
        self.proxy = proxy
        self.max_bytes = max_bytes
        #: The context's HTTP credentials (Playwright keeps one as a list of them).
        self.credentials: list[Mapping[str, Any]] = (
            [credentials] if isinstance(credentials, Mapping)
            else [one for one in credentials if isinstance(one, Mapping)]
            if isinstance(credentials, list) else [])
        # Made now, so that the CA files (SSL_CERT_FILE, SSL_CERT_DIR) are read as attach runs.
        self._ssl: ssl.SSLContext | bool = False if ignore_https_errors \
            else ssl.create_default_context()
        # In a fleet, a page's slot is looked at last as its headers go (as the gate's own
        # session does): held up past it, the request raises LateSlot, nothing sent.
        last_look = aiohttp.TraceConfig()
        last_look.on_request_headers_sent.append(check_slot)
        self._session = without_resends(aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=True,
            timeout=aiohttp.ClientTimeout(total=TIMEOUT), trace_configs=[last_look]))

    @property
    def closed(self) -> bool:
        return self._session.closed

    async def send(self, url: str, method: str, headers: Mapping[str, str],
                   body: bytes | None, checked: Sequence[Address] = (), *,
                   first_url: str, slot: Permit | None = None) -> aiohttp.ClientResponse:
        """Send one request (its headers as given, lower-case names); a public page's
        pointer (``checked``: the addresses its check found public) goes to the first of
        them, its Host header and TLS server name the host's (through a proxy, an
        ``https`` one only: the proxy connects a plain ``http`` one).  The proxy is the one
        ``first_url`` (the URL the browser asked for) takes: a redirect's hops go its way.
        ``slot``: the request's fleet slot, looked at last as its headers go."""
        route = via(self.proxy, first_url)
        extra: dict[str, Any] = {}
        if route is not None:
            extra.update(proxy=route.proxy, proxy_headers=route.proxy_headers)
            if not url.startswith("https:"):
                # Plain http goes to the proxy as a URL, which the proxy connects to (and
                # takes the Host from): an address there would lose the site's name.
                checked = ()
        # A URL's user information never goes on the wire: Chromium sends it, when it
        # does, as the Authorization header the request carries.
        sent, host = pinned(str(URL(url, encoded=True).with_user(None)), checked, https=True)
        headers = {name: value for name, value in headers.items()
                   if name != "accept-encoding"}  # aiohttp's own: the codings it decodes
        if host is not None:
            headers["host"] = host
            if sent.startswith("https:"):
                extra["server_hostname"] = urlsplit(f"//{host}").hostname
        credentials = _userinfo_for(url, first_url) or self._credentials_for(url)
        if credentials is not None and credentials.get("send") == "always":
            headers.setdefault("authorization", _basic(credentials))
        return await self._session.request(method, sent, headers=headers, data=body,
                                           allow_redirects=False, ssl=self._ssl,
                                           trace_request_ctx=RequestTrace(None, slot), **extra)

    def challenged(self, resp: aiohttp.ClientResponse, url: str, first_url: str) -> str | None:
        """The Authorization ``resp``, the answer to a request to ``url``, is answered
        with, as the browser (and Playwright's client) answers a Basic challenge: a
        ``401`` Basic challenge to a request sent without one, answered with
        :meth:`challenge_answer` (None: not a challenge, or not answered)."""
        if resp.status != 401 or "authorization" in resp.request_info.headers \
                or not resp.headers.get("www-authenticate", "").strip().startswith("Basic"):
            return None
        return self.challenge_answer(url, first_url)

    def challenge_answer(self, url: str, first_url: str) -> str | None:
        """The Authorization a ``401`` Basic challenge of ``url`` is answered with, in a
        request the browser asked for ``first_url``: that URL's user information within
        its origin, else the context's HTTP credentials for ``url``'s origin (None: none)."""
        credentials = _userinfo_for(url, first_url) or self._credentials_for(url)
        return None if credentials is None else _basic(credentials)

    def _credentials_for(self, url: str) -> Mapping[str, Any] | None:
        """The context's first HTTP credentials for ``url``'s origin (or for any), as
        Playwright picks them."""
        if not self.credentials:
            return None  # most contexts have none: no URL to parse for each request
        origin = _origin(url)
        for credentials in self.credentials:
            given = str(credentials.get("origin") or "")
            if not given or _origin(given) == origin:
                return credentials
        return None

    async def read(self, resp: aiohttp.ClientResponse, url: str) -> bytes:
        """``resp``'s decoded body; past ``max_bytes`` :class:`BodyTooLarge` (nothing past
        the limit read, the response closed)."""
        try:
            if self.max_bytes is None:
                return await resp.read()
            body, _, cut = await read_body(resp, self.max_bytes, keep=True)
            if cut:
                raise BodyTooLarge(url, self.max_bytes, _HINT)
            return body
        finally:
            resp.close()

    async def close(self) -> None:
        await self._session.close()


def browser_headers(resp: aiohttp.ClientResponse) -> dict[str, str]:
    """``resp``'s headers as the browser is handed them with its decoded body: names in
    lower case, repeated ones joined (``Set-Cookie`` a line each), without the headers
    of the bytes on the wire (length, transfer coding, a coding decoded here)."""
    headers: CIMultiDictProxy[str] = resp.headers
    coding = headers.get("content-encoding", "").strip().lower()
    dropped = _WIRE | ({"content-encoding"} if coding in _DECODED else frozenset())
    joined: dict[str, str] = {}
    for name, value in headers.items():
        name = name.lower()
        if name in dropped:
            continue
        if name in joined:
            joined[name] += ("\n" if name == "set-cookie" else ", ") + value
        else:
            joined[name] = value
    return joined


def route_client(context: BrowserContext, proxy: ProxySettings | None,
                 max_bytes: int | None) -> RouteClient:
    """The request client of an attachment of ``context``: through ``proxy``, with the
    context's certificate errors setting and HTTP credentials (a browser's own, else
    the launch's, as Playwright keeps them)."""
    if context.browser is None:
        raise UnsafeBrowser("the browser context's Playwright cannot be found: attach a "
                            "context of a browser launched or connected by Playwright")
    if max_bytes is not None and max_bytes < 0:
        raise ValueError(f"max_bytes must be None or at least 0, not {max_bytes!r}")
    launched, own = _made_with(context.browser), _made_with(context)
    return RouteClient(
        proxy,
        ignore_https_errors=bool(own.get("ignoreHTTPSErrors")
                                 or launched.get("ignore_https_errors")),
        credentials=own.get("httpCredentials") or launched.get("http_credentials"),
        max_bytes=max_bytes)


def _userinfo_for(url: str, first_url: str) -> Mapping[str, Any] | None:
    """The user information of ``first_url`` (the URL the browser asked for) as the
    credentials a challenge from ``url`` is answered with: Chromium answers with them a
    challenge of their own origin alone, the redirect's hops within it too (None: none
    given, or ``url`` of another origin)."""
    given = URL(first_url, encoded=True)
    if given.raw_user is None or _origin(url) != _origin(first_url):
        return None
    return {"username": given.user, "password": given.password}


def _basic(credentials: Mapping[str, Any]) -> str:
    user = f"{credentials.get('username') or ''}:{credentials.get('password') or ''}"
    return "Basic " + b64encode(user.encode()).decode("ascii")


def _origin(url: str) -> str:
    """``url``'s origin as the URL standard serialises it (no default port)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return url
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + ("" if port in (None, default) else f":{port}")
