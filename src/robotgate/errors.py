"""What the gate raises at its callers.

A client adapter raises a refusal as a subclass of :class:`Disallowed` that is also its
client's error, so that the ``except`` clauses written for the client catch it:
``gate.fetch`` and ``gate.middleware`` raise
:class:`~robotgate.gate.aiohttp_client.AiohttpDisallowed` (an ``aiohttp.ClientError``),
the httpx transport :class:`~robotgate.integrations.httpx.HttpxDisallowed` (an
``httpx.RequestError``), Scrapy's middleware and Crawlee's adapter their own
``RobotsDisallowed`` (an ``IgnoreRequest``, a pipeline interruption).  So is an
invalid URL: ``AiohttpInvalidURL`` / ``AiohttpNonHttpURL`` (aiohttp's
``InvalidUrlClientError`` / ``NonHttpUrlClientError``) and ``HttpxInvalidURL`` (an
``httpx.UnsupportedProtocol``) are robotgate's :class:`~robotgate.urls.InvalidURL` too.
Those classes live with their adapters: the core imports no client.
"""

from __future__ import annotations

from .decision import Decision
from .error_root import Error
from .redaction import redact_text
from .urls import redact

__all__ = ["BodyTooLarge", "Disallowed", "Error", "GateClosed", "ProxyFailed",
           "TooManyRedirects", "WaitsOnItself"]


class Disallowed(Error):
    """robots.txt forbids this URL; ``decision`` says which rule or fetch outcome.

    LWP::RobotUA answered such requests with "403 Forbidden by robots.txt".
    The message (and so the repr) holds no secret (:func:`robotgate.redaction.redact_text`);
    :attr:`url` is the URL refused as it was asked for (or as a redirect named it), whole:
    returned to whoever asked, as ``CrawlResult.final_url`` (docs/secrets.md).
    """

    def __init__(self, url: str, decision: Decision) -> None:
        super().__init__(redact_text(f"{redact(url)}: {decision.reason}"))
        self.url = url
        self.decision = decision


class BodyTooLarge(Error, ValueError):
    """A response body (decoded) was longer than ``gate.fetch``'s ``max_bytes`` (or
    ``attach``'s: ``setting`` names the one).

    The response is closed; nothing past the limit was kept.  The URL is shown
    and kept without its password.
    """

    #: The ``Decision.outcome`` of a browser's or crawler's request refused so (its
    #: adapter's ``on_refused`` hears a :class:`Disallowed` with it).
    OUTCOME = "body-too-large"

    def __init__(self, url: str, limit: int,
                 setting: str = "(max_bytes); read big bodies with gate.fetch(url, stream=True)",
                 ) -> None:
        url = redact(url)
        super().__init__(f"{url}: the body is longer than {limit:,} bytes {setting}")
        self.url = url
        self.limit = limit


class GateClosed(Error, RuntimeError):
    """The gate was closed while a task was still asking it something."""


class TooManyRedirects(Error):
    """A request was redirected more often than its limit allows (``limit`` hops
    followed; the next was not).  An adapter raises it as a subclass that is also its
    client's error (``gate.fetch``'s is an ``aiohttp.TooManyRedirects``).  The URL is
    shown and kept without its password: the last one redirected."""

    def __init__(self, url: str, limit: int) -> None:
        self.url = redact(url)
        self.limit = limit
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.url}: redirected more than {self.limit} times"


class WaitsOnItself(Error, RuntimeError):
    """A request would wait for its server's turn, which the task that made it holds:
    it was made, in the same asyncio task, while that task's own request to the same
    server (politeness key) is in flight, and that request holds every slot the server
    has (``max_per_host``).  It could never start, so it is refused at once, nothing
    sent.  The usual cause: a middleware after ``gate.middleware`` in a session's chain
    that makes a request of its own through the session (a token refresh, a log call);
    put it before ``gate.middleware``, whose turn then comes after it (docs/gate.md,
    "Where the gate goes in a middleware chain").  The URL is shown and kept without its
    password.  The aiohttp paths raise it as an ``aiohttp.ClientError`` too."""

    def __init__(self, url: str, key: str) -> None:
        self.url = redact(url)
        self.key = key
        super().__init__(
            f"{self.url}: this task already holds the turn of its server ({key}), so the"
            " request would wait on itself for good; it was made while the same task's"
            " request to that server is in flight (a middleware after gate.middleware"
            " that makes its own request through the session? put it before"
            " gate.middleware)")


class ProxyFailed(Error):
    """The proxy the requests go through failed: it refused its credentials (407), or
    could not be reached (connection refused, unreachable).  The crawler's set-up
    failed, not the site: it is no answer of any site's, so no robots.txt verdict is
    made of it, nothing is cached or stored for the site, and ``gate.crawl`` stops with
    it rather than skip every site.  ``proxy``: the proxy, without its password;
    ``url``: the request it failed (without its password).  The aiohttp paths raise it
    as an ``aiohttp.ClientConnectionError`` too."""

    def __init__(self, proxy: str, url: str, why: str) -> None:
        self.proxy = redact(proxy)
        self.url = redact(url)
        super().__init__(redact_text(
            f"{self.url}: the proxy {self.proxy} failed ({why}); no answer of the site's,"
            " and not kept as one"))
