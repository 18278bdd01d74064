"""A Scrapy spider middleware that says who pointed at each request a spider makes.

A request a callback yields while it handles a response is a pointer of that page
(``meta["robotgate_pointed_by"]``: the response's URL), judged by
:class:`~robotgate.integrations.scrapy.RobotGateMiddleware` under the private-network
rule as ``gate.crawl`` judges a link; a start request is the spider's own input.  A
request that already says who pointed at it keeps what it says.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from .middleware import POINTED_BY

__all__ = ["RobotGatePointersMiddleware"]


class RobotGatePointersMiddleware(BaseSpiderMiddleware):
    """``SPIDER_MIDDLEWARES = {"robotgate.integrations.scrapy.RobotGatePointersMiddleware":
    50}``: each request made from a response is a pointer of that response's page."""

    def get_processed_request(self, request: Request,
                              response: Response | None) -> Request | None:
        if response is not None and POINTED_BY not in request.meta:
            request.meta[POINTED_BY] = response.url
        return request
