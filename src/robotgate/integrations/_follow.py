"""For the adapters that follow redirects through the exchange, one request turn per
hop (the Playwright route, the crawlee client): their limit, their header names, and
where a public page's pointer is sent.  The hop itself (method, body, the headers that
stay on their origin) is the core's: :mod:`robotgate.policy.redirect_hop`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from ..policy.hops import Address, literal_address

__all__ = ["MAX_REDIRECTS", "lower", "pinned"]

#: Hops followed for one request before it fails (Chromium's limit, and crawlee's).
MAX_REDIRECTS = 20


def lower(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with lower-case names, so that the gate's ``User-Agent`` replaces
    the client's ``user-agent``."""
    return {name.lower(): value for name, value in headers.items()}


def pinned(url: str, checked: Sequence[Address], *,
           https: bool = False) -> tuple[str, str | None]:
    """The URL a public page's pointer is sent to, and the Host header it then carries
    (None: sent as it is).  ``checked``: the addresses the pointer check found public
    (empty: the request is not guarded).

    A client that looks the name up again could find a private address (DNS
    rebinding): an ``http`` URL naming a host goes to the first checked address, its
    Host header naming the host.  An ``https`` URL does too with ``https`` True, for a
    client whose TLS takes the server's name (SNI, the certificate's check) from the
    Host header, as Playwright's request client does; else it goes by its name: the
    certificate must be the name's, which a server in a private network cannot show
    (unless the client ignores certificate errors).

    >>> import ipaddress
    >>> pinned("http://a.test:8080/p?q", [ipaddress.ip_address("93.184.216.34")])
    ('http://93.184.216.34:8080/p?q', 'a.test:8080')
    >>> pinned("http://a.test/", [ipaddress.ip_address("2001:db8::1")])
    ('http://[2001:db8::1]/', 'a.test')
    >>> pinned("https://a.test/", [ipaddress.ip_address("93.184.216.34")])
    ('https://a.test/', None)
    >>> pinned("https://a.test/", [ipaddress.ip_address("93.184.216.34")], https=True)
    ('https://93.184.216.34/', 'a.test')
    """
    parts = urlsplit(url)
    host = parts.hostname
    if (not checked or not (parts.scheme == "http" or (https and parts.scheme == "https"))
            or not host or literal_address(host) is not None):
        return url, None
    address = checked[0]
    where = f"[{address}]" if address.version == 6 else str(address)
    port = f":{parts.port}" if parts.port is not None else ""
    authority = parts.netloc.rpartition("@")[2]
    userinfo = parts.netloc[:len(parts.netloc) - len(authority)]
    return urlunsplit(parts._replace(netloc=f"{userinfo}{where}{port}")), authority
