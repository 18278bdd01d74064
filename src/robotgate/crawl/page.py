"""One page of a crawl: its request, the handler's look at the answer, its links.

The answer's story goes into the URL's :class:`CrawlResult` (status, final URL,
usage, directives); what comes back is the links to follow and how a relative one
resolves.  The body is read for links only when something needs it: ``follow_links``,
or a ``<base href>`` for the links a handler returned (``gate.fetch`` has it read).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Generic

from ..links import LinkReader, link_resolver, read_links
from ..links import PageLinks as FoundLinks
from ..policy.fetch import LocalFailure, local_failure
from ..politeness.robots_fetcher import open_file_limit
from ..urls import redact
from .gate_interface import CrawlGate, CrawlResponse, Opening, ResponseT
from .options import Handler, Links
from .results import CrawlResult, CrawlSummary, Handled, final_url_of

if TYPE_CHECKING:
    from ..robots.directives import PageDirectives

__all__ = ["LocalRetries", "PageLinks", "PageReader", "count_links", "drop_unsent",
           "is_transient", "route_of", "shortage_of"]

#: Errors retried by the name of a class they derive from: clients' connection
#: and timeout errors, named, since the crawl knows no client (aiohttp's
#: ``ClientConnectionError`` and ``ClientPayloadError``, httpx's ``NetworkError``,
#: ``TimeoutException`` and ``RemoteProtocolError``).
_TRANSIENT_NAMES = frozenset({"ClientConnectionError", "ClientPayloadError", "NetworkError",
                              "TimeoutException", "RemoteProtocolError"})
_HTML_TYPES = ("text/html", "application/xhtml+xml")
#: The longest page whose links are read at once (a few milliseconds); a longer one's
#: are read a step at a time, the loop's other tasks running between the steps.
_READ_AT_ONCE = 256 * 1024

#: A URL this machine could not send (no file descriptor, memory or port) is asked
#: again up to this many times, not counted against ``retries``: the pause before each
#: doubles from the first to the last (about a minute in all).
LOCAL_RETRIES = 8
_LOCAL_PAUSE = 0.25
_LOCAL_PAUSE_MAX = 16.0

#: A page's links and how a relative one resolves (None: no link to resolve).
PageLinks = tuple[Iterable[str], "Callable[[str], str | None] | None"]


class PageReader(Generic[ResponseT]):
    """Fetches a page through ``fetch`` and hands its answer to ``handler``.

    ``retried(record)`` says whether the answer recorded is asked again: then the
    handler never sees it (it sees the answer that counts, not the 429 before)."""

    def __init__(self, gate: CrawlGate[ResponseT], handler: Handler[ResponseT],
                 fetch: Callable[..., Opening[ResponseT]], summary: CrawlSummary, *,
                 retried: Callable[[CrawlResult], bool], follow_links: bool,
                 record_directives: bool, obey_nofollow: bool, max_links: int) -> None:
        self.gate = gate
        self.handler = handler
        self.fetch = fetch
        self.summary = summary
        self.retried = retried
        self.follow_links = follow_links
        self.obey_nofollow = obey_nofollow
        self.max_links = max_links
        # The directives only when something uses them: reading them scans the head.
        self.directives_wanted = record_directives or gate.tdmrep

    def request(self, url: str, pointed_by: str | None) -> Opening[ResponseT]:
        """The page's request, made (``fetch`` called) but not sent: its ``via`` says the
        way it goes before robots.txt is asked; :meth:`read` sends it, or
        :func:`drop_unsent` lets it go."""
        return self.fetch(url) if pointed_by is None else self.fetch(url, pointed_by=pointed_by)

    async def read(self, url: str, record: CrawlResult, call: Opening[ResponseT]) -> PageLinks:
        """Send ``call``, ``url``'s request: the page's links to follow (none when its
        directives say ``nofollow``), and how a relative one resolves."""
        record.started = time.time()
        async with _sent(call, record) as resp:
            record.answered = time.time()
            record.status = status = int(resp.status)
            final = str(resp.url)
            record.final_url = final_url_of(url, resp)  # returned whole (docs/secrets.md)
            record.usage = dict(self.gate.usage(url, resp.headers))
            if self.retried(record):
                return (), None  # the handler sees the answer that counts, not the 429 before
            returned = await _handled(self.handler, url, resp)
            head = None
            if isinstance(returned, Handled):
                head = returned.head
                record.bytes = returned.bytes
                record.info.update(returned.info)
                links: Iterable[str] = returned.links
            else:
                links = returned if returned is not None else ()
            if isinstance(links, (str, bytes)):
                raise TypeError("the handler returned a string, not an iterable of URLs")
            body = head
            base: str | None = None  # a long page's <base href>, once read
            if self.follow_links and 200 <= status < 300 and _is_html(resp):
                body = body if body is not None else await _body_of(resp)
                if body:
                    found, base = await _links_of(body, final)
                    summary = self.summary
                    summary.rel_nofollow += found.nofollow
                    summary.other_schemes += found.other_schemes + found.invalid
                    links = itertools.chain(links, found.urls)
            links, some = _peek(links)
            if self.directives_wanted or (some and self.obey_nofollow):
                record.directives = self.gate.directives(resp, head)
            if some and body is None:
                body = await _body_of(resp)  # for a <base href> (gate.fetch has it read)
        if not some:
            return (), None
        directives: PageDirectives | None = record.directives
        if directives is not None and directives.nofollow and self.obey_nofollow:
            # The page asks not to follow its links; they may still come from another page.
            record.not_followed = count_links(links, self.max_links)
            self.summary.not_followed += record.not_followed
            return (), None
        if body is not None and len(body) > _READ_AT_ONCE:
            # A long page's <base href> is looked for a step at a time, as its links are.
            if base is None:
                base = (await _links_of(body, final))[1]
            return links, link_resolver(final, None, base or "")
        return links, link_resolver(final, body)


async def _links_of(body: bytes, final: str) -> tuple[FoundLinks, str | None]:
    """The links of the page ``body`` found at ``final`` and, for a long page, its
    ``<base href>`` (None: none, or a short page).  A long page is read a step at a
    time (:class:`~robotgate.links.LinkReader`: a few milliseconds each), the loop's
    other requests going on between the steps: a pure-Python parse in a thread
    would hold the interpreter as long."""
    if len(body) <= _READ_AT_ONCE:
        return read_links(body, final), None
    reader = LinkReader(body, final)
    while not reader.step():  # each step reads on: as many as the page is long
        await asyncio.sleep(0)
    return reader.links(), reader.base


@contextlib.asynccontextmanager
async def _sent(call: Opening[ResponseT], record: CrawlResult) -> AsyncIterator[ResponseT]:
    """``call`` entered; ``record.started`` becomes the time its request left when the
    gate tells it (``sent``: after the wait for a fleet slot, which is no part of the
    request), answered or failed."""
    try:
        async with call as resp:
            record.started = getattr(call, "sent", None) or record.started
            yield resp
    except BaseException:
        record.started = getattr(call, "sent", None) or record.started
        raise


def route_of(call: object) -> object:
    """The route ``call`` says its request takes (``gate.fetch``'s: its proxy; None: it
    says none), which its origin's robots.txt is asked by too."""
    return getattr(call, "via", None)


def drop_unsent(call: object) -> None:
    """Let go of a request made and never sent (robots.txt refused it, or its server's
    turn had not come): one holding a coroutine (aiohttp's ``session.get(url)``) is
    closed, not left to warn that it was never awaited."""
    close = getattr(call, "close", None)
    if callable(close):
        close()


def _peek(links: Iterable[str]) -> tuple[Iterable[str], bool]:
    """``links`` as they were, and whether it holds any (one item read ahead)."""
    if isinstance(links, (list, tuple)):
        return links, bool(links)
    items = iter(links)
    for first in items:
        return itertools.chain((first,), items), True
    return (), False


def _is_html(resp: CrawlResponse) -> bool:
    content_type = resp.headers.get("Content-Type") or ""
    return str(content_type).partition(";")[0].strip().lower() in _HTML_TYPES


async def _body_of(resp: CrawlResponse) -> bytes | None:
    """The body a response has read (``read()`` gives it again without I/O), if any."""
    try:
        body = await resp.read()
    except Exception:  # a stream already read, a closed connection, no read(): no body
        return None
    return body if isinstance(body, bytes) else None


async def _handled(handler: Handler[ResponseT], url: str, resp: ResponseT) -> Links:
    """The handler's answer; a CancelledError of its own (a task of its own cancelled,
    not this visit) becomes an error to record: the URL is not lost."""
    try:
        returned = handler(url, resp)
        return await returned if inspect.isawaitable(returned) else returned
    except asyncio.CancelledError:
        cancelling = getattr(asyncio.current_task(), "cancelling", None)  # Python 3.11+
        if cancelling is None or cancelling():
            raise  # this visit is cancelled: the crawl ends, or the page timed out
        raise RuntimeError("the handler raised CancelledError") from None


def count_links(links: Iterable[str], most: int) -> int:
    """How many URLs ``links`` holds (an endless iterable is read no further than ``most``)."""
    return sum(1 for link in itertools.islice(links, most) if isinstance(link, str))


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is worth asking again: a timeout or a connection error."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def shortage_of(exc: BaseException, url: str) -> LocalFailure | None:
    """The shortage of this machine's that ``exc`` is, or was caused by (None: none):
    the crawler's failure, never the site's."""
    return local_failure(exc, redact(url), open_file_limit())


class LocalRetries:
    """The URLs this machine could not send, each asked again after a pause, at most
    :data:`LOCAL_RETRIES` times; the resource frees as other requests end."""

    def __init__(self) -> None:
        self._tries: dict[str, int] = {}  # only URLs short of something right now

    def pause(self, url: str) -> float | None:
        """The seconds to wait before ``url`` is asked again (None: no more tries)."""
        tries = self._tries.get(url, 0) + 1
        if tries > LOCAL_RETRIES:
            del self._tries[url]
            return None
        self._tries[url] = tries
        return min(_LOCAL_PAUSE * 2.0 ** (tries - 1), _LOCAL_PAUSE_MAX)

    def done(self, url: str) -> None:
        """``url`` ended otherwise: its count starts afresh."""
        self._tries.pop(url, None)
