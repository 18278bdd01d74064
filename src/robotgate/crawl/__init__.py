"""The crawl behind ``gate.crawl``: the frontier and what it reports.

It drives the gate through a small typed interface the gate implements
(:class:`~.gate_interface.CrawlGate`), so it sits outside the politeness core:
it may use ``politeness/`` and ``store/``, which never use it.

- :mod:`.frontier`: the crawl itself (:class:`Frontier`, :func:`crawl`);
- :mod:`.options`: its keywords (:class:`CrawlOptions`), checked by name;
- :mod:`.host_queues`: a queue per politeness key and the heap of keys by due time;
- :mod:`.page`: one page's request, the handler's look at it, its links;
- :mod:`.discovery`: which links a page gives join the crawl, and their pages;
- :mod:`.results`: :class:`CrawlResult`, :class:`CrawlSummary`, :class:`Handled`;
- :mod:`.gate_interface`: what the crawl needs of the gate and reads of a response.
"""

from .frontier import Frontier, crawl
from .gate_interface import CrawlGate, CrawlResponse
from .options import DEFAULT_RETRIES, CrawlOptions, check_options
from .results import CrawlResult, CrawlSummary, Handled, HostSummary

__all__ = [
    "DEFAULT_RETRIES",
    "CrawlGate",
    "CrawlOptions",
    "CrawlResponse",
    "CrawlResult",
    "CrawlSummary",
    "Frontier",
    "Handled",
    "HostSummary",
    "check_options",
    "crawl",
]
