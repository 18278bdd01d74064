"""What the crawl needs from the gate, and what it reads of a response.

The frontier drives the gate through :class:`CrawlGate` alone: public, documented
members of :class:`robotgate.RobotGate`, which satisfies it (``gate.crawl`` hands
itself to the frontier as one, so the type checker holds it to this list).  Any
other object with these members can drive a crawl too (the tests' fake gates do).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from ..decision import Decision
    from ..policy.hops import IsPrivate
    from ..policy.tdm import TdmVerdict
    from ..politeness.waits import ServerWait
    from ..robots.directives import PageDirectives

__all__ = ["CrawlGate", "CrawlResponse", "Opening", "ResponseT", "ResponseT_co"]


class CrawlResponse(Protocol):
    """What the frontier reads of a response (``aiohttp.ClientResponse`` has it)."""

    @property
    def status(self) -> int:
        """The answer's status code."""
        ...

    @property
    def url(self) -> object:
        """The URL that answered, after redirects (its text is used)."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """The answer's headers (``Content-Type``, ``Content-Usage``, ...)."""
        ...

    def read(self) -> Awaitable[bytes]:
        """The body; asked only for links, once the handler is done with the response."""
        ...


#: A response the crawl reads (the frontier's own type variable).
ResponseT = TypeVar("ResponseT", bound=CrawlResponse)
#: The gate's response type.  Unbounded: mypy 2.4 refuses the type argument in
#: ``CrawlGate[aiohttp.ClientResponse]`` against a CrawlResponse bound, though it takes a
#: ClientResponse as a CrawlResponse; the frontier, which reads it, holds it to the bound.
ResponseT_co = TypeVar("ResponseT_co", covariant=True)


class Opening(Protocol[ResponseT_co]):
    """A request under way, as ``async with`` opens it (``gate.fetch(url)``).  The crawl
    makes it before it asks the URL's robots.txt, and reads its ``via`` if it has one
    (``gate.fetch``'s: its proxy) to ask robots.txt the way the request goes."""

    async def __aenter__(self) -> ResponseT_co: ...

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> object: ...


class CrawlGate(Protocol[ResponseT_co]):
    """The gate as the crawl sees it: robots.txt's verdicts, each server's turn, the
    requests, what a page's answer says of its use, and the events the crawl reports.
    See :class:`robotgate.RobotGate` for each member."""

    @property
    def max_per_host(self) -> int:
        """Requests in flight per server: the crawl's default ``per_host``."""
        ...

    @property
    def tdmrep(self) -> bool:
        """Whether each page's TDM reservation is asked (:meth:`tdm`)."""
        ...

    @property
    def is_private(self) -> IsPrivate:
        """Which addresses a public page's link may not lead to."""
        ...

    def fetch(self, url: str, *, pointed_by: str | None = None) -> Opening[ResponseT_co]:
        """Fetch ``url`` politely; ``pointed_by``: the page whose link it is."""
        ...

    async def allowed(self, url: str, *, pointed_by: str | None = None,
                      via: object = None) -> bool:
        """Whether robots.txt lets the robot fetch ``url``; ``pointed_by``: the page whose
        link it is (its robots.txt asked as that pointer's, as :meth:`fetch` asks it);
        ``via``: the route of the page's request (its opening's ``via``: a proxy), which
        robots.txt is asked by too (the crawl gives it only when the opening has one)."""
        ...

    async def decide(self, url: str, *, pointed_by: str | None = None,
                     via: object = None) -> Decision:
        """robots.txt's verdict for ``url``, with its reason; ``pointed_by`` and ``via``
        as in :meth:`allowed` (a pointer refused: its refusal)."""
        ...

    def pace_key(self, url: str) -> str:
        """The politeness key of ``url``: one queue of the crawl per key."""
        ...

    def server_wait(self, url: str) -> ServerWait:
        """How long until ``url``'s server may be asked, and why."""
        ...

    def usage(self, url: str, headers: Mapping[str, str] | None = None) -> Mapping[str, bool]:
        """What the site lets its content be used for (AIPREF)."""
        ...

    def directives(self, response: CrawlResponse, body: bytes | None = None) -> PageDirectives:
        """The page's directives (``X-Robots-Tag``, robots meta tags, TDMRep's)."""
        ...

    async def tdm(self, url: str, page: PageDirectives | None = None, *,
                  pointed_by: str | None = None, via: object = None) -> TdmVerdict:
        """Whether text-and-data-mining rights are reserved for ``url``; ``pointed_by``
        and ``via`` as :meth:`allowed` takes them."""
        ...

    def report_skipped(self, url: str, decision: Decision) -> None:
        """The crawl skips ``url`` for ``decision``: tell the gate's listeners."""
        ...

    def report_waited(self, url: str, seconds: float, reason: str) -> None:
        """The crawl held ``url`` back ``seconds`` for ``reason``: tell the listeners."""
        ...
