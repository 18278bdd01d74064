"""What the gate raises at its callers.

A client adapter raises a refusal as a subclass of :class:`Disallowed` that is also its
client's error, so that the ``except`` clauses written for the client catch it:
``gate.fetch`` and ``gate.middleware`` raise
:class:`~robotgate.gate.aiohttp_client.AiohttpDisallowed` (an ``aiohttp.ClientError``),
the httpx transport :class:`~robotgate.integrations.httpx.HttpxDisallowed` (an
``httpx.RequestError``), Scrapy's middleware and Crawlee's adapter their own
``RobotsDisallowed`` (an ``IgnoreRequest``, a pipeline interruption).  Those classes
live with their adapters: the core imports no client.
"""

from __future__ import annotations

from .decision import Decision
from .error_root import Error
from .redaction import redact_text
from .urls import redact

__all__ = ["BodyTooLarge", "Disallowed", "Error", "GateClosed", "TooManyRedirects"]


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
    """A response body (decoded) was longer than ``gate.fetch``'s ``max_bytes``.

    The response is closed; nothing past the limit was kept.  The URL is shown
    and kept without its password.
    """

    def __init__(self, url: str, limit: int) -> None:
        url = redact(url)
        super().__init__(f"{url}: the body is longer than {limit:,} bytes (max_bytes); "
                         "read big bodies with gate.fetch(url, stream=True)")
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
