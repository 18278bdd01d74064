"""A Scrapy spider middleware that says who pointed at each request a spider makes,
and follows no link of a page that says ``nofollow``.

A request a callback yields while it handles a response is a pointer of that page
(``meta["robotgate_pointed_by"]``: the response's URL), judged by
:class:`~robotgate.integrations.scrapy.RobotGateMiddleware` under the private-network
rule as ``gate.crawl`` judges a link; a start request is the spider's own input.  A
request that already says who pointed at it keeps what it says, unless it says what
the response's own request said (``meta=response.meta`` carries that over): then it is
the response's page's pointer too, and the ``redirect_urls`` it carries over are marked
as not its own hops (``meta["robotgate_carried_hops"]``).

A page whose directives say ``nofollow`` for this robot (``<meta name="robots">`` or
``X-Robots-Tag``, read by the downloader middleware into
``meta["robotgate_directives"]``) points nowhere: the requests its callback yields are
dropped, as ``gate.crawl`` drops such a page's links, and counted in the stat
``robotgate/nofollow_dropped``. ``ROBOTGATE_OBEY_NOFOLLOW = False`` keeps them.
"""

from __future__ import annotations

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import scrapy  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Scrapy: pip install 'robotgate[scrapy]'") from _exc

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from ...redaction import logger
from ...robots.directives import PageDirectives
from ...urls import redact
from .middleware import CARRIED_HOPS, DIRECTIVES, POINTED_BY

__all__ = ["NOFOLLOW_DROPPED", "RobotGatePointersMiddleware"]

log = logger("robotgate.scrapy")

#: The stat counting the requests dropped because their page said ``nofollow``.
NOFOLLOW_DROPPED = "robotgate/nofollow_dropped"


class RobotGatePointersMiddleware(BaseSpiderMiddleware):
    """``SPIDER_MIDDLEWARES = {"robotgate.integrations.scrapy.RobotGatePointersMiddleware":
    50}``: each request made from a response is a pointer of that response's page, and
    a ``nofollow`` page's requests are dropped."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.obey_nofollow = crawler.settings.getbool("ROBOTGATE_OBEY_NOFOLLOW", True)

    def get_processed_request(self, request: Request,
                              response: Response | None) -> Request | None:
        if response is None:
            return request
        directives = response.meta.get(DIRECTIVES)
        if self.obey_nofollow and isinstance(directives, PageDirectives) and directives.nofollow:
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value(NOFOLLOW_DROPPED)
            log.debug("not following %s: %s says %s", redact(request.url),
                      redact(response.url), ", ".join(directives.flags()))
            return None
        meta, page = request.meta, response.meta
        if POINTED_BY not in meta or (POINTED_BY in page and meta[POINTED_BY] == page[POINTED_BY]):
            meta[POINTED_BY] = response.url
        came = meta.get("redirect_urls")
        if came:  # a callback's request follows no redirect yet: carried over from the page
            meta[CARRIED_HOPS] = len(came)
        return request
