"""A redirect's next hop, for the adapters that follow redirects themselves, one
request turn per hop (the Playwright route, the crawlee client)."""

from __future__ import annotations

from collections.abc import Mapping

from ..urls import split_origin

__all__ = ["MAX_REDIRECTS", "lower", "next_hop"]

#: Hops followed for one request before it fails (Chromium's limit, and crawlee's).
MAX_REDIRECTS = 20
# Headers scoped to one origin: dropped when a redirect leaves it.
_ORIGIN_SCOPED = frozenset({"authorization", "cookie", "proxy-authorization"})


def lower(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with lower-case names, so that the gate's ``User-Agent`` replaces
    the client's ``user-agent``."""
    return {name.lower(): value for name, value in headers.items()}


def next_hop(status: int, method: str, headers: dict[str, str], body: bytes | None,
             url: str, target: str) -> tuple[str, dict[str, str], bytes | None]:
    """The method, headers (lower-case names) and body the redirect of ``url`` to
    ``target`` is followed with: a 303, and a POST's 301 or 302, become a GET without
    a body (as browsers do); credentials and cookies stay on their origin."""
    if (status in (301, 302) and method == "POST") or (status == 303 and method != "HEAD"):
        method, body = "GET", None
        headers = {name: value for name, value in headers.items()
                   if not name.startswith("content-")}
    if split_origin(target)[0] != split_origin(url)[0]:
        headers = {name: value for name, value in headers.items()
                   if name not in _ORIGIN_SCOPED}
    return method, headers, body
