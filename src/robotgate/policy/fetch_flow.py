"""The robots.txt fetch as a pure flow: a generator that asks for requests and is sent responses.

Like httpx's ``Auth.auth_flow``, the flow holds the whole policy (validators,
redirects and their loops, private-address hops, 304) and does no I/O; each
client adapter drives it with :func:`robotgate.politeness.robots_fetcher.fetch_robots`.

>>> from robotgate.policy import FetchPolicy
>>> flow = robots_flow("http://example.com", None, FetchPolicy(), 0.0)
>>> request = next(flow)
>>> request.url
'http://example.com/robots.txt'
>>> try:
...     flow.send(RobotsResponse(200, {}, b"User-agent: *\\nDisallow: /x\\n", request.url))
... except StopIteration as done:
...     print(done.value.outcome, done.value.body)
ok b'User-agent: *\\nDisallow: /x\\n'
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urljoin

from ..records import Outcome, RobotsEntry
from ..urls import InvalidURL, redact, split_origin
from .fetch import (
    FetchPolicy,
    entry_for_not_modified,
    entry_for_redirect_failure,
    entry_for_response,
)
from .hops import Address
from .network import refusal, strip_credentials

__all__ = ["REDIRECTS", "RobotsFlow", "RobotsRequest", "RobotsResponse", "resource_name",
           "robots_flow"]

REDIRECTS = frozenset((301, 302, 303, 307, 308))


@dataclass(frozen=True, slots=True)
class RobotsRequest:
    """A GET the adapter must send, without following redirects.

    ``headers`` are added to the adapter's own (User-Agent, From).  The body is
    read, at most ``max_bytes`` of it, only for 2xx answers.  ``previous`` is the
    URL of the hop before (None for the first): an adapter that resolves host
    names refuses the hop when :func:`~robotgate.policy.network.refusal` would
    for the address it connects to, by answering with ``refused`` set (a reason
    beginning with ``name``).
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    max_bytes: int = 500 * 1024
    previous: str | None = None
    #: Unix time by which the whole fetch (every hop) must be over.  The fetcher
    #: bounds the time itself unless the transport says it ends the request then
    #: (``enforces_deadline = True``), as the aiohttp one does with its own timer.
    deadline: float | None = None
    #: The file fetched, as accounts of the fetch name it: "robots.txt", "tdmrep.json".
    name: str = "robots.txt"
    #: The origin was reached through a public page's pointer: the connection must
    #: reach a public address (the adapter checks where it connects, or sends to one of
    #: ``checked``, the addresses the pointer check found public).  First request only:
    #: a redirect hop is judged by its own pointer check (``previous``).
    guard: bool = False
    checked: tuple[Address, ...] = ()
    #: The route the pages that asked take (an adapter's own value, such as aiohttp's
    #: proxy), every hop taking it too: robots.txt is asked the way its pages go.
    via: object = None
    #: What entitles the request to leave now (in a fleet, its server's slot or crawl
    #: lease's fence; None: nothing to check): the adapter looks at it again as the
    #: bytes go out, and sends nothing when it is past (the fetcher asks for the next).
    permit: object = None


@dataclass(frozen=True, slots=True)
class RobotsResponse:
    """What the adapter got: status, headers (case-insensitive lookup), body if 2xx."""

    status: int
    headers: Mapping[str, str]
    body: bytes | None = None
    url: str = ""
    refused: str | None = None


RobotsFlow = Generator[RobotsRequest, RobotsResponse, RobotsEntry]


def resource_name(path: str) -> str:
    """The name accounts of a fetch give the file at ``path``.

    >>> resource_name("/.well-known/tdmrep.json")
    'tdmrep.json'
    """
    return path.rsplit("/", 1)[-1]


def robots_flow(
    origin: str,
    previous: RobotsEntry | None,
    policy: FetchPolicy,
    now: float,
    clock: Callable[[], float] | None = None,
    path: str = "/robots.txt",
    guard: bool = False,
    checked: tuple[Address, ...] = (),
    via: object = None,
) -> RobotsFlow:
    """Fetch ``origin``'s robots.txt: yields requests, returns the entry to store.

    ``previous`` (an earlier good copy) makes the first request conditional.
    ``clock`` gives the time of each answer (default: ``now`` for all).
    ``path`` fetches another well-known file by the same rules, e.g. TDMRep's
    ``/.well-known/tdmrep.json``.  ``guard``: a public page's pointer led to the
    origin, so the first request's connection must reach a public address
    (``checked``: the addresses the pointer check found).  ``via``: the route its
    pages take, which every request takes too (see :class:`RobotsRequest`).
    """
    when = clock if clock is not None else (lambda: now)
    url = origin + path
    name = resource_name(path)
    headers: dict[str, str] = {}
    conditional = previous is not None and previous.outcome == Outcome.OK and (
        previous.body is not None
    )
    if conditional and previous is not None:
        if previous.etag:
            headers["If-None-Match"] = previous.etag
        if previous.last_modified:
            headers["If-Modified-Since"] = previous.last_modified
    seen: set[str] | None = None  # the URLs asked, made by the first redirect
    hop_from: str | None = None
    deadline = now + policy.timeout
    for _hop in range(policy.max_redirects + 1):
        resp = yield RobotsRequest(url, headers, policy.max_bytes, hop_from, deadline, name,
                                   guard and hop_from is None, checked if hop_from is None else (),
                                   via)
        if resp.refused is not None:
            return entry_for_redirect_failure(origin, resp.refused, when(), policy, final_url=url)
        status = resp.status
        location = resp.headers.get("Location")
        if status in REDIRECTS and location:
            try:
                target = strip_credentials(urljoin(url, location.strip()))
            except ValueError:
                target = location
            if seen is None:
                seen = {url}
            why = _bad_target(url, target, seen, name)
            if why is not None:
                return entry_for_redirect_failure(origin, why, when(), policy, final_url=url)
            seen.add(target)
            hop_from, url = url, target
            headers = {}  # validators belong to the first URL
            continue
        if status == 304 and conditional and previous is not None:
            return entry_for_not_modified(previous, resp.headers, when(), policy, name=name)
        body = resp.body if 200 <= status < 300 else None
        return entry_for_response(origin, status, resp.headers, body, when(), policy,
                                  previous, final_url=url, name=name)
    return entry_for_redirect_failure(
        origin, f"{name} redirected more than {policy.max_redirects} times",
        when(), policy, final_url=url,
    )


def _bad_target(url: str, target: str, seen: set[str], name: str) -> str | None:
    try:
        split_origin(target)
    except InvalidURL:
        return f"{name} redirected to {redact(target)!r}"
    if target in seen:
        return f"{name} redirect loop at {redact(target)}"
    why = refusal(url, target)
    return f"{name} redirect {why}" if why is not None else None
