"""crawlee's client's own credentials, kept on the origin of a request's first hop.

A crawlee client may be made with credentials of its own: ``HttpxHttpClient(auth=...,
cookies=..., headers={"Authorization": ...})``, ``ImpitHttpClient(cookies=...,
headers=...)``, ``CurlImpersonateHttpClient(auth=..., headers=...)``.  Alone, the client
adds them to the first request and its own redirect follows them as the client does
(httpx drops the Authorization and its own cookies on a hop to another origin; libcurl
its ``auth=`` and credential headers).  Through :class:`RobotGateHttpClient` each hop is
a request of its own, to which the client would add them again, on any origin.

So a hop after the chain left its first origin is sent by the client's *bare twin*: the
same client made without its credentials (its ``auth=``, its ``cookies=``, and the
Authorization, Cookie and Proxy-Authorization of its ``headers=``; the core's
:data:`~robotgate.policy.redirect_hop.ORIGIN_SCOPED`), as the caller's own credential
headers go by the core's rule.  The session's cookies and impit's ``cookie_jar`` are
jars, matched to each hop's URL by the client: unchanged.  A client of another kind is
sent as it is (its credentials are its own to scope).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from crawlee.http_clients import HttpClient

from ..policy.redirect_hop import ORIGIN_SCOPED
from ..private_parts import CRAWLEE_CLIENT_KWARGS, missing

__all__ = ["bare_twin"]

#: For each crawlee client (module and class): the attribute keeping the keyword
#: arguments its library's client is made with, and the ones that carry credentials.
_KWARGS: dict[str, tuple[str, frozenset[str]]] = {
    "crawlee.http_clients._httpx.HttpxHttpClient": (
        "_async_client_kwargs", frozenset({"auth", "cookies"})),
    "crawlee.http_clients._impit.ImpitHttpClient": (
        "_async_client_kwargs", frozenset({"cookies"})),
    "crawlee.http_clients._curl_impersonate.CurlImpersonateHttpClient": (
        "_async_session_kwargs", frozenset({"auth", "cookies"})),
}
#: Where the three keep their library's clients, made from those arguments on first use.
_CLIENTS = "_client_by_proxy_url"


def _kind(client: HttpClient) -> tuple[str, frozenset[str]] | None:
    for cls in type(client).__mro__:
        found = _KWARGS.get(f"{cls.__module__}.{cls.__qualname__}")
        if found is not None:
            return found
    return None


def _scoped(name: object) -> bool:
    return str(name).lower() in ORIGIN_SCOPED


def _without_credentials(kwargs: Mapping[str, Any], credentials: frozenset[str]
                         ) -> dict[str, Any] | None:
    """``kwargs`` without credentials; None when they carry none."""
    bare = {name: value for name, value in kwargs.items() if name not in credentials}
    headers = bare.get("headers")
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
    if any(_scoped(name) for name, _ in pairs):
        kept = [(name, value) for name, value in pairs if not _scoped(name)]
        bare["headers"] = dict(kept) if isinstance(headers, Mapping) else kept
    elif len(bare) == len(kwargs):
        return None
    return bare


def bare_twin(client: HttpClient) -> HttpClient | None:
    """``client`` made without credentials of its own (see the module); None when it has
    none (or is of no kind known here): it may send every hop itself.
    :class:`~robotgate.private_parts.PrivatePartMissing` when crawlee keeps a known
    client's arguments elsewhere (nothing sent: its credentials cannot be told)."""
    kind = _kind(client)
    if kind is None:
        return None
    attribute, credentials = kind
    kwargs = getattr(client, attribute, None)
    if not isinstance(kwargs, dict) or not isinstance(getattr(client, _CLIENTS, None), dict):
        raise missing(CRAWLEE_CLIENT_KWARGS)
    bare = _without_credentials(kwargs, credentials)
    if bare is None:
        return None
    twin = copy.copy(client)  # its settings shared; its library's clients its own
    setattr(twin, attribute, bare)
    setattr(twin, _CLIENTS, {})
    return twin
