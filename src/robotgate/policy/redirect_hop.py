"""The request a redirect is followed with: one rule for every adapter that follows
redirects through the core's exchange (``gate.fetch``, the Playwright route, crawlee).

:func:`next_hop` gives a :class:`NextHop`: the next request's URL and method, whether
its body goes again, and the headers it goes without.  Each rule follows a client:

- **The method** is aiohttp's (3.14, ``ClientSession._request``), which is also the
  Fetch standard's (what browsers do): a 303 becomes a GET unless the request was a
  HEAD (a HEAD stays a HEAD); a POST answered 301 or 302 becomes a GET; any other
  method keeps itself on 301 and 302 (a PUT stays a PUT), and every method on 307 and
  308.  (httpx differs: it turns a 302 of any method but HEAD into a GET.)
- **The body** goes again exactly when the method is kept (aiohttp: "for 307/308,
  always preserve the request body; for 301/302 with non-POST methods, preserve the
  request body"); a request made a GET goes without it and without the headers that
  describe a body (Content-Length and Transfer-Encoding, as aiohttp and httpx; the
  Fetch standard's request-body headers, Content-Type, -Encoding, -Language and
  -Location, as browsers).
- **Credentials stay on their origin**: a hop to another origin (scheme, host or port,
  the default port counting as none) goes without Authorization, Cookie and
  Proxy-Authorization, the three aiohttp drops (browsers drop Authorization; their
  cookies come from the jar, for the new origin).  A cookie jar's cookies for the new
  origin are the client's to add.  Credentials a Location names are never sent: the
  private-network check strips them (:func:`~robotgate.policy.hops.parse_hop`).  This
  holds for credentials in every form the caller gives them (a client's ``auth=``, its
  session's default ``auth=`` or headers, a URL's userinfo: each adapter drops its
  forms where :attr:`NextHop.leaves_origin`), stricter than aiohttp 3.14 in one case:
  it sends a session's ``auth=`` again to the new origin; robotgate's paths do not.
  A proxy's credentials (``proxy_auth=``, a proxy URL's userinfo) go to the proxy
  alone, on every hop, as the clients send them.

The address a hop is sent to is not here: the hop's turn checks it
(:class:`~robotgate.politeness.request_turn.RequestTurn`'s ``guard`` and ``checked``).
Standard library only, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..urls import InvalidURL, split_origin

__all__ = ["BODY_HEADERS", "ORIGIN_SCOPED", "NextHop", "leaves_origin", "next_hop"]

#: Headers that only go with the origin they were set for (lower-case names).
ORIGIN_SCOPED = frozenset({"authorization", "cookie", "proxy-authorization"})
#: Headers that describe the request's body, which go with it (lower-case names).
BODY_HEADERS = frozenset({"content-length", "transfer-encoding", "content-type",
                          "content-encoding", "content-language", "content-location"})

#: A value of the adapter's own header mapping.
V = TypeVar("V")
#: An adapter's body, whatever its type.
B = TypeVar("B")


@dataclass(frozen=True, slots=True)
class NextHop:
    """The request a redirect is followed with.  ``url``: where it goes; ``method``:
    its method; ``keeps_body``: whether the body goes again; ``leaves_origin``: whether
    the hop goes to another origin; ``dropped``: the lower-case names of the headers
    it goes without."""

    url: str
    method: str
    keeps_body: bool
    leaves_origin: bool
    dropped: frozenset[str]

    def headers(self, headers: Mapping[str, V]) -> dict[str, V]:
        """``headers`` without the ones the hop drops (names in any case).

        >>> hop = next_hop(302, "GET", "http://a.test/", "http://b.test/")
        >>> hop.headers({"Authorization": "Bearer x", "X-Mine": "1"})
        {'X-Mine': '1'}
        """
        dropped = self.dropped
        return {name: value for name, value in headers.items()
                if name.lower() not in dropped}

    def body(self, body: B | None) -> B | None:
        """``body`` if it goes again, else None."""
        return body if self.keeps_body else None


def _origin(url: str) -> str | None:
    try:
        return split_origin(url)[0]
    except InvalidURL:
        return None


def leaves_origin(from_url: str, to_url: str) -> bool:
    """Whether a hop from ``from_url`` to ``to_url`` goes to another origin (one that
    cannot be read counts as another): the hop that goes without the credentials.

    >>> leaves_origin("http://a.test/", "http://a.test:80/b"), leaves_origin(
    ...     "http://a.test/", "http://a.test:8080/")
    (False, True)
    """
    origin = _origin(from_url)
    return origin is None or origin != _origin(to_url)


def next_hop(status: int, method: str, from_url: str, to_url: str) -> NextHop:
    """The request that follows the redirect (``status``) of a ``method`` request to
    ``from_url`` to ``to_url`` (see the module for which client each rule follows).
    A URL whose origin cannot be read counts as another origin.

    >>> hop = next_hop(303, "HEAD", "http://a.test/", "http://a.test/b")
    >>> hop.method, hop.keeps_body, hop.leaves_origin
    ('HEAD', True, False)
    >>> hop = next_hop(301, "POST", "http://a.test/", "https://a.test/")
    >>> hop.method, hop.keeps_body, sorted(hop.dropped)[:3]
    ('GET', False, ['authorization', 'content-encoding', 'content-language'])
    """
    method = method.upper()
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, keeps_body, dropped = "GET", False, BODY_HEADERS
    else:
        keeps_body, dropped = True, frozenset()
    other = leaves_origin(from_url, to_url)
    if other:
        dropped = dropped | ORIGIN_SCOPED
    return NextHop(to_url, method, keeps_body, other, dropped)
